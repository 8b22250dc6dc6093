// Acts on slurmd probes (see slurmd_liveness.hpp): picks the nodes to probe from the planner's
// view, folds each round of results into the per-node records, and calls Slurm: DOWN with the
// controller's unreachable reason for a node whose slurmd stopped answering (Slurm then ends the
// job on it with NODE_FAIL or requeues it, and the planner's failover restarts it elsewhere at
// once), RESUME for such a node once its slurmd answers again. Every call is in the action log.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "controller/safed/failover_planner.hpp"
#include "common/slurm/client.hpp"
#include "controller/safed/slurmd_liveness.hpp"
#include "controller/safed/state_store.hpp"

namespace safe {

class DeadNodeDetector {
 public:
  DeadNodeDetector(SlurmActions& slurm, StateStore& store) : slurm_(slurm), store_(store) {}

  // The nodes of the SaFE jobs the planner last saw running or failing over, and the nodes the controller downed
  // as unreachable.
  std::vector<ProbeTarget> targets(const FailoverPlanner& planner);

  // One round of results: updates the records (nodes not probed this round are forgotten) and
  // acts on the planner's latest node view.
  // `steady_ms` times the probes (a run of failures lasts as long as it lasted, whatever the
  // system clock did); `now_s`, the wall clock, dates the actions.
  // Before it sets a node DOWN, the planner holds the other nodes of the jobs there
  // (FailoverPlanner::hold_before_node_loss).
  void apply(const std::vector<ProbeResult>& results, FailoverPlanner& planner, const LivenessPolicy& policy,
             long long steady_ms, long long now_s);

  const std::unordered_map<std::string, SlurmdLiveness>& liveness() const { return liveness_; }
  // The nodes whose latest probe failed, but for a slurmd taken for restarting (for the planner:
  // FailoverPlanner::set_unanswered_nodes).
  std::unordered_set<std::string> unanswered() const;
  long long downed() const { return downed_; }    // successful DOWNs so far
  long long resumed() const { return resumed_; }  // successful resumes so far
  std::vector<LogEntry> take_log();

 private:
  SlurmActions& slurm_;
  StateStore& store_;
  std::unordered_map<std::string, SlurmdLiveness> liveness_;
  // job -> (host list, expanded): expanded again only when a job's nodes change
  std::unordered_map<std::uint32_t, std::pair<std::string, std::vector<std::string>>> job_nodes_;
  std::unordered_set<std::string> busy_;  // the nodes of job_nodes_
  std::vector<LogEntry> log_;
  LivenessPolicy policy_;  // of the last round
  long long downed_ = 0, resumed_ = 0;
};

}  // namespace safe
