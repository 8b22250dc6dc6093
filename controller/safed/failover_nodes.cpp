// The node side of the planner: faults recorded once per episode, lemon nodes quarantined, and
// quarantines restored, ended outside SaFE, or released by safectl.
#include <algorithm>
#include <iterator>

#include "common/hostlist.hpp"
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
  if (spare_inputs_ok_) {
    std::unordered_set<std::string> reserved;
    for (const SlurmReservation& r : reservations_)
      if (r.active)
        for (std::string& name : expand_hostlist(r.nodes)) reserved.insert(std::move(name));
    for (SlurmNode& n : nodes_) n.reserved = reserved.count(n.name) > 0;
  }
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
      if (!restored)
        log("safed: node " + n.name + ": cannot restore its quarantine: " + restored.error(), LogPriority::warning);
    }
    if (step.end_quarantine) {
      store_.release_quarantine(n.name, now);
      log_action(now, {}, n.name, "quarantine ended", "resumed outside SaFE (scontrol)", true);
      quarantined_.erase(q);
      faults_[n.name].clear();
    }
    if (step.record_fault) record_fault(n, c, now);
    known->second = step.in_fault;
    auto lost = lost_by_slurm_.find(n.name);
    if (lost != lost_by_slurm_.end() && (!step.in_fault || lost->second.verdict)) {
      if (step.in_fault) settle_lost_node(n, lost->second, now);
      lost_by_slurm_.erase(lost);
    }
  }
  // Nodes gone from Slurm's list.
  for (auto it = lost_by_slurm_.begin(); it != lost_by_slurm_.end();)
    it = node_index_.count(it->first) ? std::next(it) : lost_by_slurm_.erase(it);
}

bool FailoverPlanner::fault_awaits_probe(const SlurmNode& n, NodeCondition c) const {
  // Slurm's own DOWN for a node it cannot reach (SaFE's unreachable DOWN is a probe's verdict
  // already); without probes or an address to probe, the fault counts as Slurm reports it.
  return c == NodeCondition::down && n.state_down && n.not_responding && !is_unreachable_reason(n.reason) &&
         !n.addr.empty() && config_.controller.slurmd_probe.interval_ms > 0;
}

std::unordered_set<std::string> FailoverPlanner::nodes_awaiting_probe() const {
  std::unordered_set<std::string> out;
  for (const auto& [name, lost] : lost_by_slurm_)
    if (!lost.verdict) out.insert(name);
  return out;
}

void FailoverPlanner::note_probe_results(const std::vector<ProbeResult>& results, long long targets_pass) {
  for (const ProbeResult& r : results) {
    auto it = lost_by_slurm_.find(r.node);
    // A round whose targets were chosen before the pass that found the node DOWN probed it as it
    // was before.
    if (it != lost_by_slurm_.end() && !it->second.verdict && it->second.seen_pass < targets_pass) it->second.verdict = r;
  }
}

void FailoverPlanner::settle_lost_node(const SlurmNode& n, const LostBySlurm& lost, long long now) {
  if (lost.verdict->outcome != ProbeOutcome::connected) {
    count_fault(n.name, lost.fault, now);
    return;
  }
  NodeFaultRecord not_counted = lost.fault;
  not_counted.kind = kSlurmLostContactKind;
  store_.set_node_fault_kind(not_counted);
  for (auto& f : faults_[n.name])
    if (f.time == lost.fault.time && f.detail == lost.fault.detail) f.kind = not_counted.kind;
  std::string detail = "Slurm set it DOWN (" + lost.fault.detail + ") but its slurmd answers safed at " +
                       lost.verdict->address +
                       ": slurmd runs and slurmctld cannot talk with it (munged stopped or failing on the node, or "
                       "a munge key or clock that differs from the controller's); not counted toward a quarantine. "
                       "Slurm returns the node once it hears from its slurmd again (ReturnToService)";
  log_action(now, {}, n.name, "not a machine fault", detail, true);
}

void FailoverPlanner::record_fault(const SlurmNode& n, NodeCondition c, long long now) {
  NodeFaultRecord rec{n.name, n.reason_time ? static_cast<long long>(n.reason_time) : now,
                      c == NodeCondition::down ? "down" : "safe_drain", n.reason.empty() ? "not responding" : n.reason};
  if (!store_.add_node_fault(rec)) return;  // seen before this restart
  faults_[n.name].push_back(rec);
  log("safed: node " + n.name + ": fault recorded (" + rec.kind + ": " + rec.detail + ")");
  // The fault is evidence for the failover of a job that ran there at once; whether it counts
  // toward a quarantine may wait for the probe.
  if (fault_awaits_probe(n, c)) lost_by_slurm_[n.name] = {pass_, std::nullopt, rec};
  else count_fault(n.name, rec, now);
}

void FailoverPlanner::count_fault(const std::string& node, const NodeFaultRecord& rec, long long now) {
  if (quarantined_.count(node)) return;
  std::vector<long long> times;
  for (const auto& f : faults_[node])
    if (f.kind != kSlurmLostContactKind) times.push_back(f.time);
  const auto& fc = config_.failover;
  if (!is_lemon(times, now, fc.lemon_faults, fc.lemon_window_s)) return;
  std::string reason = quarantine_reason(node, static_cast<int>(times.size()), fc.lemon_window_s, rec.detail);
  checkpoint_store();
  Status drained = slurm_.drain_node(node, reason);
  log_action(now, {}, node, "quarantine", drained ? reason : drained.error(), drained.ok());
  if (!drained) return;
  QuarantineRecord q{node, now, reason};
  store_.set_quarantine(q);
  quarantined_[node] = q;
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
