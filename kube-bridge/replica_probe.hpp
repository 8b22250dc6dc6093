// HTTP probes of service replicas (readiness, liveness, the scaling metric), all of one pass at
// once (libcurl's multi interface) under one deadline: a replica that accepts and never answers,
// or answers without end, costs the pass at most the deadline and kMaxProbeBodyBytes, never the
// bridge's API. Redirects are not followed; only the replica's own host and port are asked.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace safe::bridge {

constexpr std::size_t kMaxProbeBodyBytes = 256 * 1024;

struct ProbeRequest {
  std::string host;
  int port = 0;
  std::string path;  // starts with '/'
};

struct ProbeResult {
  bool answered = false;  // an HTTP status came back within the deadline
  long status = 0;
  std::string body;       // at most kMaxProbeBodyBytes
  bool passed() const { return answered && status >= 200 && status < 400; }
};

std::vector<ProbeResult> probe_all(const std::vector<ProbeRequest>& requests, std::chrono::milliseconds deadline);

// The sum of every sample of `metric` in a Prometheus text exposition (any labels); nullopt when
// there is none.
std::optional<double> metric_total(std::string_view exposition, std::string_view metric);

}  // namespace safe::bridge
