#include "healthcheck/kube_mark.hpp"

namespace safe {

KubeMarkDecision decide_kube_mark(const RunVerdict& verdict) {
  if (verdict.drain_cause) return {KubeMarkAction::mark, verdict.drain_cause->check};
  if (verdict.all_recovered) return {KubeMarkAction::clear, {}};
  return {};  // failing but not yet past its count, or recovering: leave the mark as it is
}

std::vector<std::string> kube_mark_command(const std::string& tool, const std::string& node,
                                           const KubeMarkDecision& decision) {
  switch (decision.action) {
    case KubeMarkAction::mark: return {tool, "mark", node, "--reason", decision.reason};
    case KubeMarkAction::clear: return {tool, "clear", node};
    case KubeMarkAction::none: break;
  }
  return {};
}

}  // namespace safe
