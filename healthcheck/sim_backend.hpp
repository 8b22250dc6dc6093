// The sim backend: simulated GPUs read from <sim_dir>/<node>.json (common/sim_gpu_file.hpp). A
// simulation for the local test cluster, the demo and benchmarks, not a hardware backend.
#pragma once

#include "healthcheck/gpu_backend.hpp"

namespace safe {

class SimBackend : public GpuBackend {
 public:
  SimBackend(std::string sim_dir, std::string node, int default_gpus);
  std::string name() const override { return "sim"; }
  // A file that asks for a hang ("hang": true) makes this block forever, as a hung library would:
  // the collector's timeout must then turn the GPU checks into "unknown".
  GpuSnapshot collect() override;

 private:
  std::string sim_dir_, node_;
  int default_gpus_;
};

}  // namespace safe
