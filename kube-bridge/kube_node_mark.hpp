// SaFE's unhealthy mark on a Kubernetes node (label and NoSchedule taint
// safe-for-slurm.io/unhealthy=<reason>). The call the bridge makes on failover and the health
// agent makes for its own node.
#pragma once

#include <string>

#include "common/result.hpp"
#include "kube-bridge/kube_client.hpp"

namespace safe::bridge {

// Sets the mark (or, with `clear`, removes it, keeping every other taint and label).
Status mark_node_unhealthy(KubeClient& client, const std::string& node, const std::string& reason, bool clear);

}  // namespace safe::bridge
