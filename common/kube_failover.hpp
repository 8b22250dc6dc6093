// What to do with a workload on Kubernetes when its pods change: the Kubernetes half of SaFE's
// failure classification, as a small pure table. A pod lost to its node (node NotReady, the
// DisruptionTarget condition, SaFE's unhealthy label or taint on the node) is an infrastructure
// failure: taint that node, recreate the Job without it, attempt + 1, while retries remain. A
// container exiting non-zero on a healthy node is the user's error: Failed, no retry.
// NOTE for the merge with the controller branch: safed's classifier (failure classes node_fault,
// infra_transient, user_error, ...) should become the one source; this table then maps pod
// observations onto those classes instead of deciding on its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace safe {

struct PodObservation {
  std::string name;
  std::string node;                  // empty while unscheduled
  std::string phase;                 // Pending, Running, Succeeded, Failed, Unknown
  std::optional<int> exit_code;      // of the worker container, once terminated
  bool node_not_ready = false;       // the node's Ready condition is False or Unknown
  bool disruption_target = false;    // the pod's DisruptionTarget condition is True
  bool node_marked_unhealthy = false;  // SaFE's unhealthy label or taint is on the node
};

enum class KubeAction { wait, succeeded, failover, fail_user_error, fail_retries_exhausted };
std::string_view to_string(KubeAction action);

struct KubeDecision {
  KubeAction action = KubeAction::wait;
  std::string bad_node;  // failover: the node to taint and exclude
  std::string message;   // for the workload's events
};

// attempt: 1 for the first run; max_retries: the workload's effective retries.
KubeDecision decide_kube_workload(const std::vector<PodObservation>& pods, int completions, int attempt, int max_retries);

}  // namespace safe
