// The sim backend's files: one JSON file per node (<sim_dir>/<node>.json, the GpuSnapshot format)
// describing simulated GPUs. This is a simulation for the local test cluster, the demo and
// benchmarks; `safectl inject` edits the files to inject faults.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/gpu_snapshot.hpp"

namespace safe {

enum class SimFault { ecc, lost, hot, xgmi, pcie, replays, hang, clear };

std::optional<SimFault> sim_fault_from_string(std::string_view name);
std::string_view to_string(SimFault fault);

// Applies a fault to one GPU (gpu >= 0) or, for hang and clear with gpu < 0, to the whole node.
// Returns an error message when the GPU index does not exist.
Status apply_sim_fault(GpuSnapshot& snapshot, int gpu, SimFault fault);

std::string sim_file_path(std::string_view sim_dir, std::string_view node);
// Reads the node's file; a missing file reads as `default_gpus` healthy GPUs.
Result<GpuSnapshot> load_sim_file(const std::string& path, int default_gpus);
// Writes atomically (temporary file, then rename), so a checker never reads half a file.
Status save_sim_file(const std::string& path, const GpuSnapshot& snapshot);

}  // namespace safe
