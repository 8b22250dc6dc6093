// safe-kube-manifest-samples DIR: writes the Kubernetes objects safe-kube-bridge generates for
// the sample workload, in each form the bridge produces (PVC or host-path checkpoints, a first
// attempt running a script, the headless Service), as DIR/*.json for the schema check
// (tests/kube/manifest_schemas.sh). A test tool: not installed.
#include <fstream>
#include <iostream>
#include <utility>

#include "tests/kube/sample_workload.hpp"

int main(int argc, char** argv) {
  using namespace safe::bridge;
  if (argc != 2) {
    std::cerr << "usage: safe-kube-manifest-samples DIR\n";
    return 2;
  }
  std::string dir = argv[1];
  KubeWorkloadContext host = samples::context();
  host.kube.checkpoint_pvc.clear();
  host.kube.checkpoint_host_path = "/data/ckpt";
  KubeWorkloadContext first = samples::context();
  first.attempt = 1;
  first.avoid_nodes.clear();
  first.record = R"({"version":1,"spec":{"name":"train"}})";
  WorkloadSpec script = samples::spec();
  script.command.clear();
  script.script = "python train.py";
  script.gpus_per_node = 0;
  script.time_limit_minutes = 0;
  const std::pair<const char*, safe::Json> written[] = {
      {"job-pvc.json", kube_job_manifest(samples::spec(), samples::context())},
      {"job-hostpath.json", kube_job_manifest(samples::spec(), host)},
      {"job-first-attempt-script.json", kube_job_manifest(script, first)},
      {"service.json", kube_service_manifest(samples::spec(), samples::context())},
  };
  for (const auto& [file, manifest] : written) {
    std::ofstream out(dir + "/" + file);
    out << safe::json_text(manifest.get());
    if (!out.good()) {
      std::cerr << "safe-kube-manifest-samples: cannot write " << dir << "/" << file << "\n";
      return 1;
    }
  }
  return 0;
}
