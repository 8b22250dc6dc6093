// Hang detection for Kubernetes workloads with a hangTimeout: the decision, kept pure. Progress is
// a pod's log output growing (the bridge asks each running pod's log for anything written since
// its previous look); when no pod of the running attempt has written for hangTimeout seconds the
// attempt is hung, which the classifier sees exactly as safed's hang on Slurm (JobEnd::hung, an
// infra_transient failure with no node at fault).
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "common/failure_classification.hpp"

namespace safe::bridge {

struct PodProgress {
  std::string pod;
  std::time_t last_output = 0;  // when output last grew, or when the pod was first seen running
};

// The classifier's input for a hung attempt, or nullopt while some pod has written within
// hang_timeout seconds (or there is no running pod to judge, or hang_timeout is off).
std::optional<JobFailure> kube_hang_failure(const std::vector<PodProgress>& pods, std::time_t now, int hang_timeout);

// How often the bridge looks at the logs of a workload with this hangTimeout: a quarter of it,
// between 1 and 30 seconds; 0 (never) without a hangTimeout.
int hang_poll_seconds(int hang_timeout);

}  // namespace safe::bridge
