// What a service's replicas need next, decided from what the bridge observed: pure, so that every
// rule (restart, back-off, crash-looping, replacement away from an unhealthy node, scaling) is
// unit-tested without Slurm. service_controller.cpp observes, calls plan_service and acts.
//
// The rules:
// - A replica whose job ended is started again: at once when its node failed (the node is left
//   out of its next job), else after a back-off that doubles with each failure of its own
//   (kFirstBackoffS .. kMaxBackoffS). kCrashLoopFailures failures in a row, each within
//   kStableRunS of its start, mark it crash-looping; it keeps backing off, the others go on.
// - A replica running on a node that is drained or down gets a replacement job first; the old job
//   is cancelled once the replacement is ready (or ends by itself), so the replica keeps serving.
// - A replica failing its liveness probe kLivenessFailures times in a row is cancelled and counts
//   as a failure.
// - Scaling: replicas wanted = ceil(metric summed over ready replicas / targetPerReplica), within
//   [minReplicas, maxReplicas]; up at once, down once fewer have done for cooldownSeconds since
//   the last change.
// - Starts are rate-limited across the bridge (a budget per pass, given by the caller).
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kube-bridge/service_record.hpp"

namespace safe::bridge {

constexpr int kFirstBackoffS = 1;
constexpr int kMaxBackoffS = 300;
constexpr int kStableRunS = 60;
constexpr int kCrashLoopFailures = 3;
constexpr int kLivenessFailures = 3;

// One of the service's jobs as observed this pass.
struct ReplicaJobObservation {
  bool live = false;         // pending or running (or requeued to run again)
  bool running = false;
  bool node_fault = false;   // ended by its node's failure (NODE_FAIL), or its node is down
  bool node_unhealthy = false;  // running on a node that is drained or down
  std::string node;
  std::string host;          // the node's address, where the replica listens
  std::string pending_reason;  // Slurm's reason while pending (Licenses: the workspace's quota)
  int exit_code = 0;         // once ended
  std::time_t start_time = 0, end_time = 0;
  bool ready = false;        // its readiness probe passed this pass (no probe: running)
  int liveness_failures = 0;  // in a row
  std::optional<double> metric;  // the scaling metric it reported this pass
};

struct ServiceObservation {
  std::time_t now = 0;
  // The service's jobs Slurm knows (by job id); a job missing here has left Slurm.
  std::map<std::uint32_t, ReplicaJobObservation> jobs;
  // Jobs carrying this service's mark that no replica holds: replica index by job id.
  std::map<std::uint32_t, int> unclaimed;
  bool shared_hosts = false;  // several nodes share an address: each replica gets its own port
};

struct ReplicaStart {
  int index = 0;
  int port = 0;
  bool replacement = false;
  std::vector<std::string> excluded_nodes;
};

struct ServicePlan {
  std::vector<ReplicaStart> starts;
  std::vector<std::uint32_t> cancels;
};

// Decides and updates `record` (replica states, desired count, events); `start_budget` is how
// many starts the rate limit allows now, and is reduced by the starts planned.
ServicePlan plan_service(ServiceRecord& record, const ServiceObservation& seen, int& start_budget);

// The caller's report of a start it made (job_id) or that failed (error).
void record_start(ServiceRecord& record, const ReplicaStart& start, std::uint32_t job_id, std::time_t now);
void record_start_failed(ServiceRecord& record, const ReplicaStart& start, const std::string& error, std::time_t now);

// Stops the service: every job cancelled, nothing started again.
ServicePlan stop_service(ServiceRecord& record, std::time_t now);

// How many replicas the rule wants for `total` of the metric.
int wanted_replicas(const ScalingRule& rule, double total, int min_replicas, int max_replicas);

}  // namespace safe::bridge
