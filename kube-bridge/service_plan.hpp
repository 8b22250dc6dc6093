// What a service's replicas need next, decided from what the bridge observed: pure, so that every
// rule (restart, back-off, crash-looping, replacement away from an unhealthy node, scaling) is
// unit-tested without Slurm. service_controller.cpp observes, calls plan_service and acts.
//
// The rules:
// - A replica whose job ended is started again: at once when its node failed (the node is left
//   out of its next job) after a run of kStableRunS or more, else after a back-off that doubles
//   with each failure of its own (kFirstBackoffS .. kMaxBackoffS). kCrashLoopFailures failures in
//   a row, each within kStableRunS of its start, mark it crash-looping; it keeps backing off, the
//   others go on.
// - A replica running on a node that is drained or down, or whose job nears its time limit, gets
//   a replacement job first; the old job is cancelled once the replacement is ready (or ends by
//   itself), so the replica keeps serving. A replacement that fails backs off as a failure.
// - A new job is kept off the node its replica was last lost on and, while other nodes are in
//   service, off the nodes of the service's other replicas (one node's fault takes one replica).
//   So that it knows them, the service's jobs start one at a time while spreading is possible:
//   a start waits (at most kPlacementWaitS) for a job submitted before it to get its node.
//   After Slurm refused a start, the next asks for any node, 10 s later and doubling to 300 s.
// - Each job of a service listens on a port of its own: the spec's port plus the lowest offset
//   no other live job of the service holds (two replicas may share a node).
// - A replica failing its liveness probe kLivenessFailures times in a row, once it has passed
//   it, is cancelled and counts as a failure (a server still loading is not killed).
// - Scaling: replicas wanted = ceil(metric summed over ready replicas / targetPerReplica), within
//   [minReplicas, maxReplicas]; up at once; down only when every ready replica reported, once
//   fewer have done for cooldownSeconds since the last change (to the most wanted meanwhile).
// - A job the bridge cancelled that is still running is cancelled again each pass.
// - Starts are rate-limited across the bridge (a budget per pass, given by the caller).
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kube-bridge/service_record.hpp"

namespace safe::bridge {

constexpr int kFirstBackoffS = 1;
constexpr int kMaxBackoffS = 300;
constexpr int kStableRunS = 60;
constexpr int kCrashLoopFailures = 3;
constexpr int kLivenessFailures = 3;
constexpr int kRetireAheadS = 120;  // a job this close to its time limit is replaced ahead of it
constexpr int kStartRetryS = 10;
constexpr int kPlacementWaitS = 10;  // how long a start waits for a sibling's job to get its node
constexpr int kSpreadWaitS = 60;     // how long a job kept off its siblings' nodes may pend
constexpr int kFirstReplacementBackoffS = 5;

// One of the service's jobs as observed this pass.
struct ReplicaJobObservation {
  bool live = false;         // pending or running (or requeued to run again)
  bool running = false;
  bool node_fault = false;   // ended by its node's failure (NODE_FAIL), or its node is down
  bool node_unhealthy = false;  // running on a node that is drained or down
  std::string node;
  std::string host;          // the node's address, where the replica listens
  std::string pending_reason;  // Slurm's reason while pending (Licenses: the workspace's quota)
  bool completing = false;   // ended, its processes still being killed (its port may be held)
  int port = 0;              // from the job's mark (adoption)
  bool ends_soon = false;    // running, within kRetireAheadS of its time limit
  int exit_code = 0;         // once ended
  std::time_t start_time = 0, end_time = 0;
  bool ready = false;        // its readiness probe passed this pass (no probe: running)
  int liveness_failures = 0;  // in a row, counted once its liveness probe has passed
  std::optional<double> metric;  // the scaling metric it reported this pass
};

struct ServiceObservation {
  std::time_t now = 0;
  // The service's jobs Slurm knows (by job id); a job missing here has left Slurm.
  std::map<std::uint32_t, ReplicaJobObservation> jobs;
  // Jobs carrying this service's mark that no replica holds: replica index by job id.
  std::map<std::uint32_t, int> unclaimed;
  std::set<std::string> usable_nodes;  // up and not drained
  std::set<std::string> free_nodes;    // of those, idle (no job on them): where spreading goes
};

struct ReplicaStart {
  int index = 0;
  int port = 0;
  bool replacement = false;
  std::vector<std::string> excluded_nodes;
  bool spread = false;  // the exclusions keep it off its siblings' nodes
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

// Stops the service: every job of it in `seen` (the jobs of the service's user that carry its
// mark) cancelled, nothing started again.
ServicePlan stop_service(ServiceRecord& record, const ServiceObservation& seen, std::time_t now);

// How many replicas the rule wants for `total` of the metric.
int wanted_replicas(const ScalingRule& rule, double total, int min_replicas, int max_replicas);

}  // namespace safe::bridge
