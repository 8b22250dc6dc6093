#include "controller/safed/dead_node_detector.hpp"

#include <unordered_set>
#include <utility>

#include "common/hostlist.hpp"

namespace safe {

std::vector<ProbeTarget> DeadNodeDetector::targets(const FailoverPlanner& planner) {
  std::unordered_map<std::uint32_t, std::pair<std::string, std::vector<std::string>>> seen;
  bool changed = false;
  for (const auto& [id, t] : planner.jobs()) {
    // A job failing over still holds its nodes: the failover needs to know which of them answer.
    if ((t.record.state != SafeJobState::running && t.record.state != SafeJobState::failing_over) || t.attempt_nodes.empty()) continue;
    auto it = job_nodes_.find(id);
    auto& entry = seen[id];
    if (it != job_nodes_.end() && it->second.first == t.attempt_nodes) {
      entry = std::move(it->second);
    } else {
      entry = {t.attempt_nodes, expand_hostlist(t.attempt_nodes)};
      changed = true;
    }
  }
  changed = changed || seen.size() != job_nodes_.size();
  job_nodes_ = std::move(seen);
  if (changed) {  // the busy set is rebuilt only when some job started, ended or moved
    busy_.clear();
    for (const auto& [id, entry] : job_nodes_) busy_.insert(entry.second.begin(), entry.second.end());
  }
  return probe_targets(planner.nodes(), busy_, planner.nodes_awaiting_probe());
}

void DeadNodeDetector::apply(const std::vector<ProbeResult>& results, FailoverPlanner& planner,
                             const LivenessPolicy& policy, long long steady_ms, long long now_s) {
  std::unordered_map<std::string, SlurmdLiveness> next;
  for (const ProbeResult& r : results) {
    auto old = liveness_.find(r.node);
    next[r.node] = after_probe(old == liveness_.end() ? SlurmdLiveness{} : old->second, r, steady_ms);
  }
  liveness_ = std::move(next);
  policy_ = policy;
  for (auto& [name, s] : liveness_) {
    const SlurmNode* node = planner.node(name);
    if (!node) continue;
    std::string reason = s.failures > 0 ? unreachable_reason(s, steady_ms) : "";  // before judging resets the count
    switch (judge_liveness(s, *node, policy)) {
      case LivenessAction::none: break;
      case LivenessAction::restarting:
        log_.push_back({LogPriority::warning,
                        "safed: node " + name + ": slurmd " + s.address +
                            " refuses connections: not running (restarting, which waits for the prologs and epilogs it "
                            "runs, or stopped); its jobs run on without it. Set DOWN if it does not serve again within " +
                            std::to_string(policy.restart_grace_ms / 1000) +
                            " s (controller.slurmd_probe.restart_grace_s)"});
        break;
      case LivenessAction::set_down: {
        planner.hold_before_node_loss(name, now_s);
        std::string err = slurm_.down_node(name, reason).error();
        store_.log_action({now_s, {}, name, "node down", err.empty() ? reason : reason + ": " + err, err.empty()});
        log_.push_back({err.empty() ? LogPriority::notice : LogPriority::warning,
                        "safed: node " + name + ": set DOWN (" + reason + ")" + (err.empty() ? "" : " FAILED: " + err)});
        downed_ += err.empty() ? 1 : 0;
        break;
      }
      case LivenessAction::resume: {
        std::string err = slurm_.resume_node(name).error();
        std::string detail = "slurmd " + s.address + " answers again (" + std::to_string(s.successes) + " probes)";
        store_.log_action({now_s, {}, name, "node resumed", err.empty() ? detail : detail + ": " + err, err.empty()});
        log_.push_back({err.empty() ? LogPriority::notice : LogPriority::warning,
                        "safed: node " + name + ": resumed, " + detail + (err.empty() ? "" : " FAILED: " + err)});
        resumed_ += err.empty() ? 1 : 0;
        break;
      }
    }
  }
}

std::unordered_set<std::string> DeadNodeDetector::unanswered() const {
  std::unordered_set<std::string> out;
  for (const auto& [name, s] : liveness_)
    if (s.last != ProbeOutcome::connected && !restarting(s, policy_)) out.insert(name);
  return out;
}

std::vector<LogEntry> DeadNodeDetector::take_log() { return std::exchange(log_, {}); }

}  // namespace safe
