// The node side of the planner: faults recorded once per episode, lemon nodes quarantined, and
// quarantines restored, ended outside SaFE, or released by safectl.
#include <algorithm>

#include "common/lemon_detection.hpp"
#include "controller/safed/failover_planner.hpp"

namespace safe {
void FailoverPlanner::observe_nodes(const std::vector<SlurmNode>& nodes, long long now) {
  // The index by name is rebuilt only when the names change (rarely: nodes added or removed).
  // Otherwise the copy below assigns element by element into the same storage, so every pointer
  // in the index still points at the node of that name.
  bool same_names = nodes.size() == nodes_.size() &&
                    std::equal(nodes.begin(), nodes.end(), nodes_.begin(),
                               [](const SlurmNode& a, const SlurmNode& b) { return a.name == b.name; });
  nodes_ = nodes;
  if (!same_names) {
    node_index_.clear();
    node_index_.reserve(nodes_.size());
    for (const SlurmNode& n : nodes_) node_index_[n.name] = &n;
  }
  bad_node_count_ = 0;
  for (const SlurmNode& n : nodes_) {
    NodeCondition c = node_condition(n);
    if (c == NodeCondition::safe_drain || c == NodeCondition::quarantined) ++bad_node_count_;
    auto known = in_fault_.find(n.name);
    if (known == in_fault_.end()) {
      long long since = std::max(now - config_.failover.lemon_window_s, store_.last_release(n.name));
      faults_[n.name] = store_.node_faults(n.name, since);
      // A node already down without a dated reason when safed starts: its fault's time is
      // unknown, and counting it again at every restart would make a lemon of it.
      known = in_fault_.emplace(n.name, c == NodeCondition::down && !n.reason_time).first;
    }
    auto q = quarantined_.find(n.name);
    NodeStep step = decide_node(n, q != quarantined_.end(), known->second);
    if (step.restore_quarantine) {
      // Someone replaced our reason (e.g. the health checker drained it again).
      Status restored = slurm_.drain_node(n.name, q->second.reason);
      if (!restored) log("safed: node " + n.name + ": cannot restore its quarantine: " + restored.error());
    }
    if (step.end_quarantine) {
      store_.release_quarantine(n.name, now);
      log_action(now, {}, n.name, "quarantine ended", "resumed outside SaFE (scontrol)", true);
      quarantined_.erase(q);
      faults_[n.name].clear();
    }
    if (step.record_fault) record_fault(n, c, now);
    known->second = step.in_fault;
  }
}

void FailoverPlanner::record_fault(const SlurmNode& n, NodeCondition c, long long now) {
  NodeFaultRecord rec{n.name, n.reason_time ? static_cast<long long>(n.reason_time) : now,
                      c == NodeCondition::down ? "down" : "safe_drain", n.reason.empty() ? "not responding" : n.reason};
  if (!store_.add_node_fault(rec)) return;  // seen before this restart
  auto& list = faults_[n.name];
  list.push_back(rec);
  log("safed: node " + n.name + ": fault recorded (" + rec.kind + ": " + rec.detail + ")");
  if (quarantined_.count(n.name)) return;
  std::vector<long long> times;
  for (const auto& f : list) times.push_back(f.time);
  const auto& fc = config_.failover;
  if (!is_lemon(times, now, fc.lemon_faults, fc.lemon_window_s)) return;
  std::string reason = quarantine_reason(n.name, static_cast<int>(times.size()), fc.lemon_window_s, rec.detail);
  checkpoint_store();
  Status drained = slurm_.drain_node(n.name, reason);
  log_action(now, {}, n.name, "quarantine", drained ? reason : drained.error(), drained.ok());
  if (!drained) return;
  QuarantineRecord q{n.name, now, reason};
  store_.set_quarantine(q);
  quarantined_[n.name] = q;
  ++counters_.quarantines;
}

Status FailoverPlanner::release_node(const std::string& node, long long now) {
  auto it = node_index_.find(node);
  bool ours = quarantined_.count(node) > 0 ||
              (it != node_index_.end() && node_condition(*it->second) == NodeCondition::quarantined);
  if (!ours) return Error{"safed: node " + node + " is not quarantined by SaFE; nothing to release"};
  Status resumed = slurm_.resume_node(node);
  log_action(now, {}, node, "quarantine released", resumed ? "by safectl node release" : resumed.error(), resumed.ok());
  if (!resumed) return Error{"safed: cannot resume " + node + ": " + resumed.error()};
  store_.release_quarantine(node, now);
  quarantined_.erase(node);
  faults_[node].clear();  // a released node starts with a clean lemon window
  return ok_status();
}

}  // namespace safe
