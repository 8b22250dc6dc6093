#include "healthcheck/sim_backend.hpp"

#include <unistd.h>

#include "common/sim_gpu_file.hpp"

namespace safe {

SimBackend::SimBackend(std::string sim_dir, std::string node, int default_gpus)
    : sim_dir_(std::move(sim_dir)), node_(std::move(node)), default_gpus_(default_gpus > 0 ? default_gpus : 8) {}

GpuSnapshot SimBackend::collect() {
  auto snapshot = load_sim_file(sim_file_path(sim_dir_, node_), default_gpus_);
  if (!snapshot) {
    GpuSnapshot s;
    s.backend = "sim";
    s.ok = false;
    s.error = snapshot.error();
    return s;
  }
  if (snapshot->hang)
    for (;;) pause();
  return *snapshot;
}

}  // namespace safe
