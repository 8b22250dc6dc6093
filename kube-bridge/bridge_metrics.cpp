#include "kube-bridge/bridge_metrics.hpp"

#include <cstdio>

namespace safe::bridge {

void BridgeMetrics::count_request(int status, double seconds) {
  int cls = status / 100;
  if (cls >= 1 && cls <= 5) by_class_[cls].fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  micros_.fetch_add(static_cast<long long>(seconds * 1e6), std::memory_order_relaxed);
}

std::string BridgeMetrics::render() const {
  std::string out;
  out += "# HELP safe_bridge_requests_total HTTP requests served, by status class.\n";
  out += "# TYPE safe_bridge_requests_total counter\n";
  for (int c = 1; c <= 5; ++c)
    out += "safe_bridge_requests_total{code=\"" + std::to_string(c) + "xx\"} " + std::to_string(by_class_[c].load()) + "\n";
  out += "# HELP safe_bridge_request_duration_seconds Time to handle a request.\n";
  out += "# TYPE safe_bridge_request_duration_seconds histogram\n";
  char le[32];
  for (std::size_t i = 0; i < kBuckets.size(); ++i) {
    std::snprintf(le, sizeof le, "%g", kBuckets[i]);
    out += "safe_bridge_request_duration_seconds_bucket{le=\"" + std::string(le) + "\"} " + std::to_string(buckets_[i].load()) + "\n";
  }
  out += "safe_bridge_request_duration_seconds_bucket{le=\"+Inf\"} " + std::to_string(count_.load()) + "\n";
  char sum[64];
  std::snprintf(sum, sizeof sum, "%.6f", static_cast<double>(micros_.load()) / 1e6);
  out += "safe_bridge_request_duration_seconds_sum " + std::string(sum) + "\n";
  out += "safe_bridge_request_duration_seconds_count " + std::to_string(count_.load()) + "\n";
  out += "# HELP safe_bridge_auth_failures_total Requests refused for missing or bad credentials.\n";
  out += "# TYPE safe_bridge_auth_failures_total counter\n";
  out += "safe_bridge_auth_failures_total " + std::to_string(auth_failures_.load()) + "\n";
  out += "# HELP safe_bridge_workloads_created_total Workloads created, by target.\n";
  out += "# TYPE safe_bridge_workloads_created_total counter\n";
  out += "safe_bridge_workloads_created_total{target=\"slurm\"} " + std::to_string(created_slurm_.load()) + "\n";
  out += "safe_bridge_workloads_created_total{target=\"kubernetes\"} " + std::to_string(created_kube_.load()) + "\n";
  return out;
}

}  // namespace safe::bridge
