// Guards against requeue storms (Meta saw one NODE_FAIL job requeued 35 times cause 548
// preemptions): a job that keeps failing waits longer before each further failover, and the
// whole cluster makes at most so many failovers a minute.
#pragma once

#include <deque>

namespace safe {

// Seconds a job must wait after its previous failover before the next one: 0 for its first,
// then initial, 2*initial, 4*initial, ... at most max_s.
long long failover_backoff_s(int failovers_done, int initial_s, int max_s);

// At most `per_minute` failovers in any 60 s window.
class FailoverRateLimiter {
 public:
  explicit FailoverRateLimiter(int per_minute) : per_minute_(per_minute) {}
  void set_limit(int per_minute) { per_minute_ = per_minute; }
  // True, and counts it, when a failover may start at `now` (unix seconds).
  bool try_acquire(long long now);
  // Records a failover made earlier (e.g. read back from the state store after a restart).
  void record(long long when);
  int used(long long now);
  int limit() const { return per_minute_; }

 private:
  void expire(long long now);
  int per_minute_;
  std::deque<long long> times_;
};

}  // namespace safe
