#include "common/kube_failover.hpp"

namespace safe {

std::string_view to_string(KubeAction action) {
  switch (action) {
    case KubeAction::wait: return "wait";
    case KubeAction::succeeded: return "succeeded";
    case KubeAction::failover: return "failover";
    case KubeAction::fail_user_error: return "fail_user_error";
    case KubeAction::fail_retries_exhausted: return "fail_retries_exhausted";
  }
  return "wait";
}

KubeDecision decide_kube_workload(const std::vector<PodObservation>& pods, int completions, int attempt, int max_retries) {
  // Node faults first: a pod that failed because its node went away says nothing about the code.
  for (const auto& pod : pods) {
    if (pod.phase == "Succeeded" || pod.node.empty()) continue;
    if (!(pod.node_not_ready || pod.disruption_target || pod.node_marked_unhealthy)) continue;
    std::string why = pod.node_marked_unhealthy ? "SaFE marked node " + pod.node + " unhealthy"
                      : pod.disruption_target   ? "pod " + pod.name + " was disrupted on node " + pod.node
                                                : "node " + pod.node + " is NotReady";
    if (attempt - 1 >= max_retries)
      return {KubeAction::fail_retries_exhausted, pod.node,
              "node_fault: " + why + "; retries exhausted (" + std::to_string(max_retries) + ")"};
    return {KubeAction::failover, pod.node, "node_fault: " + why + "; recreating without it"};
  }
  for (const auto& pod : pods)
    if (pod.phase == "Failed")
      return {KubeAction::fail_user_error, "",
              "user_error: pod " + pod.name + " exited with code " + std::to_string(pod.exit_code.value_or(-1)) +
                  " on healthy node " + (pod.node.empty() ? "?" : pod.node) + "; not retried"};
  int done = 0;
  for (const auto& pod : pods) done += pod.phase == "Succeeded";
  if (completions > 0 && done >= completions) return {KubeAction::succeeded, "", "all " + std::to_string(done) + " pods succeeded"};
  return {};
}

}  // namespace safe
