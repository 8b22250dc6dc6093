// Reads that may block, run where they cannot stall safed. Job output files, heartbeats and
// checkpoint directories belong to users, and the evidence directory sits on a shared file
// system: a FIFO, a directory with millions of entries or a hung NFS mount must never hold the
// planner's pass, and with it failovers, probes and the API. So the planner only asks for reads
// and takes the answers it has; worker threads do the reading.
//
// Every read has a deadline. Past it a running read counts as timed out (callers take that as
// "unknown", never as "no progress"), its worker is written off and a new one starts in its place,
// up to `max_stuck` written-off workers; while a read of a key is stuck, that key is not read
// again, and a stuck read that returns at last delivers its answer as usual. Once every worker is
// stuck (hung mounts took them all), a read that has waited a deadline in the queue is answered
// "timed out" too, instead of waiting for a worker forever, and is read again at the next ask: the
// caller always gets an answer in bounded time. Reads that must not wait behind users' files
// (safed's own evidence) get a reader of their own.
#pragma once

#include <any>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace safe {

class DeadlineReader {
 public:
  struct Settings {
    int workers = 4;
    std::chrono::milliseconds deadline{2000};
    int max_stuck = 32;
  };
  struct Answer {
    long long started = 0;   // when the read began (the clock below)
    bool timed_out = false;  // no value: the read passed its deadline
    std::any value;          // what the read returned
  };
  using Read = std::function<std::any()>;
  using Clock = std::function<long long()>;  // unix seconds, the planner's `now`

  DeadlineReader(Settings settings, Clock clock);
  ~DeadlineReader();
  DeadlineReader(const DeadlineReader&) = delete;
  DeadlineReader& operator=(const DeadlineReader&) = delete;

  // The newest answer for `key`, if its read started at or after `accept_since`. Queues `read`
  // when the newest answer started before `want_since` (or there is none) and no read of `key` is
  // queued, running or stuck. `urgent`: the caller waits for it (wait_for_urgent).
  std::optional<Answer> get(const std::string& key, long long accept_since, long long want_since, const Read& read,
                            bool urgent);

  // Waits at most `max` until no urgent read is queued or running; true when one was pending and
  // all of them have been answered (by a value or a timeout) by the time it returns.
  bool wait_for_urgent(std::chrono::milliseconds max);

  // Drops what is known about keys not asked for in the last `idle`.
  void forget_idle(std::chrono::seconds idle);

  // The clock stepped: every answer's time is on the old clock (and one of a read under way may
  // be), so none of them can tell fresh from stale. Forgets them all; the next asks read again.
  void drop_answers();

  struct Stats {
    long long reads = 0, timeouts = 0;
    int stuck = 0;    // workers blocked past a deadline right now
    int workers = 0;  // live worker threads, stuck ones included
  };
  Stats stats() const;

 private:
  struct Shared;
  void check_deadlines();  // with the shared lock held
  std::shared_ptr<Shared> shared_;
};

}  // namespace safe
