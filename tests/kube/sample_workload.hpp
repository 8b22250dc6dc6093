// One sample workload (a 4-node training job of alice's in workspace ml, attempt 2, avoiding
// node k3) and the context the bridge gives it: shared by the manifest unit tests and the sample
// writer whose output tests/kube/manifest_schemas.sh validates against Kubernetes' schemas.
#pragma once

#include <cstdlib>

#include "kube-bridge/kube_manifests.hpp"

namespace safe::bridge::samples {

inline WorkloadSpec spec() {
  SpecParse p = parse_workload_spec(R"({"name":"train","target":"kubernetes","image":"rocm/pytorch:latest",
    "command":["python","train.py"],"nodes":4,"gpusPerNode":8,"memory":"64G","timeLimit":60,"retries":2,
    "checkpoint":{"dir":"/ckpt/r1"},"env":{"LR":"0.1"},"labels":{"team":"llm"}})");
  if (!p.spec) std::abort();  // the sample itself is wrong: nothing below means anything
  return *p.spec;
}

inline KubeWorkloadContext context() {
  KubeWorkloadContext c;
  c.kube.namespace_ = "safe";
  c.kube.gpu_resource = "amd.com/gpu";
  c.kube.checkpoint_pvc = "ckpt";
  c.settings.workspace = "ml";
  c.settings.retries = 2;
  c.settings.ckpt_dir = "/ckpt/r1";
  c.settings.ckpt_signal = {10, 120};
  c.user = "alice";
  c.uid = 1001;
  c.gid = 1001;
  c.attempt = 2;
  c.avoid_nodes = {"k3"};
  return c;
}

}  // namespace safe::bridge::samples
