// What a GPU backend reports about the node's GPUs at one moment, as plain data. The GPU checks
// are pure functions of it; it crosses the process boundary of the GPU-library child as JSON, and
// the sim backend's per-node file is this same JSON.
#pragma once

#include "common/result.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace safe {

struct GpuProcess {
  int pid = 0;
  long long memory_mib = 0;
  std::string name;
};

// -1 (or 0 for link fields) means "the device or backend does not report it".
struct GpuDevice {
  int index = 0;
  std::string bus_id;  // PCI bus id, e.g. 0000:c1:00.0: the stable key (indices can move on reboot)
  bool responsive = true;
  std::string error;  // why it is not responsive (e.g. NVML_ERROR_GPU_IS_LOST)
  int temperature_c = -1;
  int slowdown_c = -1;  // the device's own slowdown threshold
  long long ecc_correctable = 0;
  long long ecc_uncorrectable = 0;
  int retired_pages = 0;
  bool remap_pending = false;
  bool remap_failed = false;
  long long pcie_replay = 0;
  int link_gen = 0, link_width = 0, link_max_gen = 0, link_max_width = 0;
  int xgmi_links = 0;           // XGMI / NVLink links present
  int xgmi_links_inactive = 0;  // of those, not up
  long long xgmi_errors = 0;    // error status or counter; 0 = none
  long long memory_used_mib = 0;
  long long memory_total_mib = 0;
  std::vector<GpuProcess> processes;
  int numa_node = -1;
};

struct GpuSnapshot {
  std::string backend;       // "rsmi", "nvml", "sim", or "none"
  bool ok = true;            // false: the library could not be used at all (see error)
  std::string error;
  std::vector<GpuDevice> gpus;
  int pci_gpu_count = -1;    // GPUs seen on the PCI bus, for a cross-check; -1 = not counted
  bool hang = false;         // sim only: the collector pretends the library hangs
};

std::string to_json(const GpuSnapshot& snapshot);
// Parses to_json's output (and hand-written sim files, where every field is optional).
Result<GpuSnapshot> gpu_snapshot_from_json(std::string_view text);

// Snapshot of `count` healthy simulated GPUs: the sim backend's starting point.
GpuSnapshot healthy_sim_snapshot(int count);
GpuDevice healthy_sim_gpu(int index);

}  // namespace safe
