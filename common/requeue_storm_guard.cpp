#include "common/requeue_storm_guard.hpp"

#include <algorithm>

namespace safe {

long long failover_backoff_s(int failovers_done, int initial_s, int max_s) {
  if (failovers_done <= 0) return 0;
  long long delay = initial_s;
  for (int i = 1; i < failovers_done && delay < max_s; ++i) delay *= 2;
  return std::min<long long>(delay, max_s);
}

void FailoverRateLimiter::expire(long long now) {
  while (!times_.empty() && times_.front() <= now - 60) times_.pop_front();
}

bool FailoverRateLimiter::try_acquire(long long now) {
  expire(now);
  if (static_cast<int>(times_.size()) >= per_minute_) return false;
  times_.push_back(now);
  return true;
}

void FailoverRateLimiter::record(long long when) {
  times_.insert(std::upper_bound(times_.begin(), times_.end(), when), when);
}

int FailoverRateLimiter::used(long long now) {
  expire(now);
  return static_cast<int>(times_.size());
}

}  // namespace safe
