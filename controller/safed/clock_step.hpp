// The system clock can step: an administrator's `date -s`, NTP's or chrony's first correction
// after a long drift, a VM resumed from a snapshot. safed's timers (a checkpoint's grace period,
// a job's hang timeout, backoffs, the failover rate limit) count wall-clock seconds, because
// their starting points are stored and shown as times; a step of an hour would make them fire at
// once (a false hang, a requeue without waiting for the checkpoint) or an hour late. So safed
// compares each pass's wall-clock advance with the monotonic clock's, which never steps, and
// moves its running timers by the difference (FailoverPlanner::shift_clock).
#pragma once

namespace safe {

class ClockStepWatch {
 public:
  // A difference below this is a slew or scheduling noise, not a step.
  static constexpr long long kThresholdMs = 2000;

  // The step, in whole seconds (positive: forward), since the previous call; 0 when none. The
  // first call only takes the readings.
  long long observe(long long wall_ms, long long steady_ms);

 private:
  bool started_ = false;
  long long wall_ms_ = 0, steady_ms_ = 0;
};

}  // namespace safe
