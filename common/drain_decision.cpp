#include "common/drain_decision.hpp"

namespace safe {

std::string_view to_string(NodeAction action) {
  switch (action) {
    case NodeAction::none: return "none";
    case NodeAction::drain: return "drain";
    case NodeAction::resume: return "resume";
  }
  return "?";
}

DrainDecision decide_drain(const std::optional<NodeStatus>& node, const RunVerdict& verdict, bool startup_run) {
  if (startup_run) return {NodeAction::none, {}, "startup run: the controller is not called before slurmd registers"};
  if (!node) return {NodeAction::none, {}, "node state unreadable: no action"};
  if (is_quarantine_reason(node->reason))
    return {NodeAction::none, {}, "quarantined by the controller: left alone"};
  for (const char* flag : {"REBOOT_REQUESTED", "REBOOT_ISSUED", "REBOOT", "MAINT", "MAINTENANCE", "NOT_RESPONDING",
                           "FUTURE", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "POWER_DOWN", "POWER_UP"})
    if (node->has_flag(flag)) return {NodeAction::none, {}, std::string("node is ") + flag + ": left alone"};
  if (node->state.find('*') != std::string::npos) return {NodeAction::none, {}, "node not responding: left alone"};

  bool ours = is_own_reason(node->reason);
  if (verdict.drain_cause) {
    if (!node->reason.empty() && !ours)
      return {NodeAction::none, {}, "reason set by someone else (\"" + node->reason + "\"): left alone"};
    if (ours && node->drained()) return {NodeAction::none, {}, "already drained by SaFE"};
    return {NodeAction::drain, own_reason(verdict.drain_cause->detail), "critical: " + verdict.drain_cause->detail};
  }
  if (ours && node->drained()) {
    if (verdict.all_recovered) return {NodeAction::resume, {}, "all checks passed again: resuming SaFE's drain"};
    return {NodeAction::none, {}, "drained by SaFE, recovering (" + std::to_string(verdict.clean_runs) + " clean runs)"};
  }
  return {NodeAction::none, {}, ""};
}

}  // namespace safe
