// --kube: on a Kubernetes node there is no Slurm to drain. SaFE's unhealthy mark (a label and a
// NoSchedule taint, set by safe-kube-node through the REST bridge's Kubernetes client) plays the
// drain's part, with the same hysteresis: mark once a critical check is past its fail count,
// clear once the node has had its clean runs.
#pragma once

#include <string>
#include <vector>

#include "common/health_history.hpp"

namespace safe {

enum class KubeMarkAction { none, mark, clear };

struct KubeMarkDecision {
  KubeMarkAction action = KubeMarkAction::none;
  std::string reason;  // for mark: the failing check's name (a valid label value)
};

KubeMarkDecision decide_kube_mark(const RunVerdict& verdict);

// The safe-kube-node command line that carries out `decision` for `node`; empty for none.
std::vector<std::string> kube_mark_command(const std::string& tool, const std::string& node,
                                           const KubeMarkDecision& decision);

}  // namespace safe
