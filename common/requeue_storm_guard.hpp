// Guards against requeue storms (Meta saw one NODE_FAIL job requeued 35 times cause 548
// preemptions): a job that keeps failing waits longer before each further failover, and the
// whole cluster makes at most so many failovers a minute. The cluster is shared, so the limit is
// too: a failover a user's job causes (an infrastructure exit code, a hang) can never delay one
// for a node fault, and no tenant can take more than its share of the rest.
#pragma once

#include <deque>
#include <map>
#include <string>

namespace safe {

// Seconds a job must wait after its previous failover before the next one: 0 for its first,
// then initial, 2*initial, 4*initial, ... at most max_s.
long long failover_backoff_s(int failovers_done, int initial_s, int max_s);

// In any 60 s window: at most `per_minute` failovers for node faults; and for every other cause,
// at most `per_minute` for one tenant (a workspace, or a user outside any) while it is the only
// one asking, an equal share of `per_minute` each while several are. (So while a second tenant
// starts asking, the window can briefly hold more than `per_minute` of these: the first may have
// used all of it alone.)
class FailoverRateLimiter {
 public:
  explicit FailoverRateLimiter(int per_minute) : per_minute_(per_minute) {}
  void set_limit(int per_minute) { per_minute_ = per_minute; }
  // True, and counts it, when the failover may start at `now` (unix seconds).
  bool try_acquire(long long now, const std::string& tenant, bool node_fault);
  // Records a failover made earlier (e.g. read back from the state store after a restart).
  void record(long long when, const std::string& tenant, bool node_fault);
  int used(long long now);  // failovers of every cause in the window
  // The system clock stepped by `delta` seconds: the window keeps the failovers it held.
  void shift_clock(long long delta);
  int limit() const { return per_minute_; }
  // The most failovers of user-caused kind one tenant may make in a window at `now`.
  int tenant_share(long long now);

 private:
  struct Made {
    long long time;
    std::string tenant;
    bool node_fault;
  };
  void expire(long long now);
  int per_minute_;
  std::deque<Made> made_;                       // by time
  std::map<std::string, long long> asked_;      // tenant -> last time it asked for a failover
};

}  // namespace safe
