#include "controller/safed/slurmd_liveness.hpp"

#include <cstdio>

#include "common/lemon_detection.hpp"

namespace safe {
namespace {

bool quarantined(const SlurmNode& n) { return n.drain && n.reason.rfind(kQuarantinePrefix, 0) == 0; }

}  // namespace

std::string_view to_string(ProbeOutcome o) {
  switch (o) {
    case ProbeOutcome::connected: return "connected";
    case ProbeOutcome::refused: return "connection refused";
    case ProbeOutcome::timed_out: return "no answer";
    case ProbeOutcome::silent: return "accepted, no reply";
    case ProbeOutcome::failed: return "unreachable";
  }
  return "?";
}

bool is_unreachable_reason(std::string_view reason) { return reason.rfind(kUnreachablePrefix, 0) == 0; }

SlurmdLiveness after_probe(SlurmdLiveness s, const ProbeResult& r, long long now_ms) {
  s.last = r.outcome;
  s.last_probe_ms = now_ms;
  s.address = r.address;
  if (r.outcome == ProbeOutcome::connected) {
    s.failures = 0;
    s.first_failure_ms = 0;
    s.restart_like = s.restart_noted = false;
    ++s.successes;
  } else {
    if (s.failures == 0) {
      s.first_failure_ms = now_ms;
      s.restart_like = r.outcome == ProbeOutcome::refused;
      s.restart_noted = false;
    }
    s.restart_like = s.restart_like && (r.outcome == ProbeOutcome::refused || r.outcome == ProbeOutcome::silent);
    ++s.failures;
    s.successes = 0;
  }
  return s;
}

LivenessAction judge_liveness(SlurmdLiveness& s, const SlurmNode& node, const LivenessPolicy& policy) {
  if (quarantined(node)) return LivenessAction::none;
  bool ours = out_of_service_by_safe(node);
  if (!ours && !node.state_down) {
    if (s.failures < policy.failures_to_down) return LivenessAction::none;
    if (restarting(s, policy)) {
      if (s.restart_noted) return LivenessAction::none;
      s.restart_noted = true;
      return LivenessAction::restarting;
    }
    s.failures = 0;
    s.first_failure_ms = 0;
    return LivenessAction::set_down;
  }
  s.failures = 0;
  s.first_failure_ms = 0;
  // Only the controller's own unreachable mark is lifted here, once slurmd answers again and
  // Slurm has heard from it too (a node Slurm flags as not responding would only fail again).
  // Slurm may have set the node IDLE meanwhile (ReturnToService=2, when its slurmd registered):
  // the drain kept it out of service, and it is still SaFE's to lift.
  if (ours && s.successes >= policy.successes_to_return && !node.not_responding) return LivenessAction::resume;
  return LivenessAction::none;
}

bool restarting(const SlurmdLiveness& s, const LivenessPolicy& policy) {
  return s.failures > 0 && s.restart_like && s.last_probe_ms - s.first_failure_ms < policy.restart_grace_ms;
}

bool out_of_service_by_safe(const SlurmNode& node) {
  return is_unreachable_reason(node.reason) && (node.state_down || node.drain);
}

std::string unreachable_reason(const SlurmdLiveness& s, long long now_ms) {
  char span[32];
  std::snprintf(span, sizeof span, "%.1f", static_cast<double>(now_ms - s.first_failure_ms) / 1000.0);
  return std::string(kUnreachablePrefix) + " slurmd " + s.address + " " + std::string(to_string(s.last)) + " x" +
         std::to_string(s.failures) + " over " + span + " s";
}

std::vector<ProbeTarget> probe_targets(const std::vector<SlurmNode>& nodes, const std::unordered_set<std::string>& busy,
                                       const std::unordered_set<std::string>& lost) {
  std::vector<ProbeTarget> out;
  for (const SlurmNode& n : nodes) {
    if (n.addr.empty() || quarantined(n)) continue;
    bool watch = out_of_service_by_safe(n) || (!n.state_down && busy.count(n.name) > 0) || lost.count(n.name) > 0;
    if (watch) out.push_back({n.name, n.addr, n.port > 0 ? n.port : 6818});
  }
  return out;
}

}  // namespace safe
