// Whether to drain, resume or leave a node, from its Slurm state and reason and this run's
// verdict: NHC's protocol with its reported bugs fixed (see docs/health.md).
#pragma once

#include <optional>
#include <string>

#include "common/health_history.hpp"
#include "common/slurm/node_status.hpp"

namespace safe {

enum class NodeAction { none, drain, resume };

struct DrainDecision {
  NodeAction action = NodeAction::none;
  std::string reason;  // for drain: "SaFE: ..."
  std::string why;     // one line for the log and the summary
};

// node: nullopt when reading it failed or timed out -> never act (NHC issue #134).
// startup_run: slurmd has not registered yet -> never call the controller (NHC issue #159).
DrainDecision decide_drain(const std::optional<NodeStatus>& node, const RunVerdict& verdict, bool startup_run);

std::string_view to_string(NodeAction action);

}  // namespace safe
