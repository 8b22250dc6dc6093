// GpuBackend: one interface over the GPU libraries (rocm-smi, NVML) and the simulation. A backend
// only collects a GpuSnapshot; the checks are pure functions of it (gpu_checks.hpp). Collection
// runs in a child process with a hard timeout (gpu_collector.hpp): library init can hang forever.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/config.hpp"
#include "common/gpu_snapshot.hpp"
#include "common/node_fs.hpp"

namespace safe {

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual std::string name() const = 0;
  virtual GpuSnapshot collect() = 0;
};

// `auto`: AMD when the amdgpu driver is present (/dev/kfd or /sys/module/amdgpu), else NVIDIA
// when its driver is (/dev/nvidiactl or /proc/driver/nvidia), else none (no GPUs to check).
std::optional<GpuBackendKind> detect_gpu_backend(const NodeFs& fs);

// The backend for the config; nullptr for "none" (a node without GPUs).
std::unique_ptr<GpuBackend> make_gpu_backend(const HealthConfig& config, const NodeFs& fs, const std::string& node);

// GPUs on the PCI bus (display/3D controllers of AMD or NVIDIA), the cross-check of the count the
// library reports; -1 when /sys/bus/pci cannot be read.
int count_pci_gpus(const NodeFs& fs);

// Current and maximum PCIe link of a device from sysfs (current_link_speed/width,
// max_link_speed/width); fields stay 0 when not readable.
void read_pci_link(const NodeFs& fs, const std::string& bus_id, GpuDevice& device);
// "16.0 GT/s PCIe" -> 4 (PCIe generation); 0 when unknown.
int pcie_generation_from_speed(const std::string& speed);

}  // namespace safe
