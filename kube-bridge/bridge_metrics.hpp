// The bridge's Prometheus counters (GET /metrics). Lock-free: every request updates them.
#pragma once

#include <array>
#include <atomic>
#include <string>

namespace safe::bridge {

class BridgeMetrics {
 public:
  void count_request(int status, double seconds);
  void count_auth_failure() { auth_failures_.fetch_add(1, std::memory_order_relaxed); }
  void count_created(bool kubernetes) { (kubernetes ? created_kube_ : created_slurm_).fetch_add(1, std::memory_order_relaxed); }
  std::string render() const;  // Prometheus text exposition format

 private:
  static constexpr std::array<double, 8> kBuckets = {0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5};
  std::array<std::atomic<long long>, 6> by_class_{};  // 1xx..5xx, index = status / 100
  std::array<std::atomic<long long>, kBuckets.size()> buckets_{};
  std::atomic<long long> count_{0};
  std::atomic<long long> micros_{0};
  std::atomic<long long> auth_failures_{0};
  std::atomic<long long> created_slurm_{0}, created_kube_{0};
};

}  // namespace safe::bridge
