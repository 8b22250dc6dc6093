// What a workload becomes on Kubernetes: an Indexed batch/v1 Job (completions = parallelism =
// nodes, backoffLimit 0: failover is SaFE's, not the Job controller's) and a headless Service for
// rendezvous (pod N is JOB-N.SERVICE). Pure: JSON out, validated against the official schemas by
// tests/kube/validate_manifests.mjs.
#pragma once

#include <string>
#include <vector>

#include "common/admission.hpp"
#include "common/config.hpp"
#include "kube-bridge/json_value.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {

// Every SaFE label, annotation and taint key lives under this prefix.
constexpr std::string_view kKubePrefix = "safe-for-slurm.io/";
// The label and taint key SaFE puts on a node it found unhealthy (value: the reason's class).
constexpr std::string_view kUnhealthyKey = "safe-for-slurm.io/unhealthy";

struct KubeWorkloadContext {
  KubernetesConfig kube;
  JobSettings settings;                 // the workload's effective SaFE settings (policy applied)
  std::string user;
  int attempt = 1;                      // 1 on the first run
  std::vector<std::string> avoid_nodes; // excludedNodes, plus nodes lost in earlier attempts
  std::string resume_from;              // newest complete checkpoint, "" if none
};

// "train-a2": the Job and Service of attempt 2 of workload "train".
std::string kube_object_name(const std::string& workload, int attempt);

Json kube_job_manifest(const WorkloadSpec& spec, const KubeWorkloadContext& ctx);
Json kube_service_manifest(const WorkloadSpec& spec, const KubeWorkloadContext& ctx);

}  // namespace safe::bridge
