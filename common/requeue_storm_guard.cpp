#include "common/requeue_storm_guard.hpp"

#include <algorithm>
#include <set>

namespace safe {

long long failover_backoff_s(int failovers_done, int initial_s, int max_s) {
  if (failovers_done <= 0) return 0;
  long long delay = initial_s;
  for (int i = 1; i < failovers_done && delay < max_s; ++i) delay *= 2;
  return std::min<long long>(delay, max_s);
}

void FailoverRateLimiter::expire(long long now) {
  while (!made_.empty() && made_.front().time <= now - 60) made_.pop_front();
  for (auto it = asked_.begin(); it != asked_.end();) {
    if (it->second <= now - 60) it = asked_.erase(it);
    else ++it;
  }
}

void FailoverRateLimiter::shift_clock(long long delta) {
  for (auto& m : made_) m.time += delta;
  for (auto& [tenant, when] : asked_) when += delta;
}

int FailoverRateLimiter::tenant_share(long long now) {
  expire(now);
  std::set<std::string> tenants;
  for (const auto& [tenant, when] : asked_) tenants.insert(tenant);
  for (const auto& m : made_)
    if (!m.node_fault) tenants.insert(m.tenant);
  int n = std::max<int>(1, static_cast<int>(tenants.size()));
  return std::max(1, (per_minute_ + n - 1) / n);
}

bool FailoverRateLimiter::try_acquire(long long now, const std::string& tenant, bool node_fault) {
  expire(now);
  int same_kind = 0, tenants_own = 0;
  for (const auto& m : made_) {
    if (m.node_fault != node_fault) continue;
    ++same_kind;
    if (m.tenant == tenant) ++tenants_own;
  }
  if (node_fault) {
    if (same_kind >= per_minute_) return false;
  } else {
    // Each tenant against its own share only: a tenant that had the window to itself may have
    // used all of it, and one that asks now must still get its share at once.
    asked_[tenant] = now;
    if (tenants_own >= tenant_share(now)) return false;
  }
  made_.push_back({now, tenant, node_fault});
  return true;
}

void FailoverRateLimiter::record(long long when, const std::string& tenant, bool node_fault) {
  auto at = std::upper_bound(made_.begin(), made_.end(), when, [](long long t, const Made& m) { return t < m.time; });
  made_.insert(at, {when, tenant, node_fault});
}

int FailoverRateLimiter::used(long long now) {
  expire(now);
  return static_cast<int>(made_.size());
}

}  // namespace safe
