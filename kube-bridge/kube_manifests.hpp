// What a workload becomes on Kubernetes: an Indexed batch/v1 Job (completions = parallelism =
// nodes, backoffLimit 0: failover is SaFE's, not the Job controller's) and a headless Service for
// rendezvous (pod N is JOB-N.SERVICE). The container runs the user's command behind SaFE's
// entrypoint prelude (kube_entrypoint: resume point, checkpoint signal), with the signal's lead
// time as terminationGracePeriodSeconds. Pure: JSON out, validated against the official schemas
// by tests/kube/validate_manifests.mjs.
#pragma once

#include <string>
#include <vector>

#include "common/admission.hpp"
#include "common/config.hpp"
#include "common/json_value.hpp"
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
  uid_t uid = 0;                        // the pods run as this uid and gid (never 0: runAsNonRoot)
  gid_t gid = 0;
  int attempt = 1;                      // 1 on the first run
  std::vector<std::string> avoid_nodes; // excludedNodes, plus nodes lost in earlier attempts
  CheckpointConfig checkpoint;          // complete_marker; grace_s when the settings have no lead time
  std::string record;                   // the workload's record (kube_workload_record), as an annotation
};

// The annotation holding the workload's record on its current Job.
constexpr std::string_view kRecordAnnotation = "safe-for-slurm.io/record";

// "train-a2": the Job and Service of attempt 2 of workload "train".
std::string kube_object_name(const std::string& workload, int attempt);

// "ml/alice/train": the workload's own directory on the checkpoint volume (its subPath), the same
// for every attempt and no other workload's. "-" stands for no workspace.
std::string kube_checkpoint_subpath(const std::string& workspace, const std::string& user, const std::string& workload);

Json kube_job_manifest(const WorkloadSpec& spec, const KubeWorkloadContext& ctx);
Json kube_service_manifest(const WorkloadSpec& spec, const KubeWorkloadContext& ctx);

}  // namespace safe::bridge
