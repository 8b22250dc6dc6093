// Runs the GPU backend in a child process (this same program, re-executed with
// --gpu-snapshot-child) with a hard timeout, so a GPU library that hangs on a sick device can
// never block the checker, the prolog or slurmd. The child prints the snapshot as JSON.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/process_runner.hpp"
#include "healthcheck/gpu_checks.hpp"

namespace safe {

inline constexpr const char* kGpuSnapshotChildFlag = "--gpu-snapshot-child";

struct GpuChildArgs {
  std::string self_exe;     // this program (/proc/self/exe)
  std::string config_path;  // empty: the child uses $SAFE_CONFIG / the default
  std::string node;
  std::string root;         // NodeFs root
};

std::vector<std::string> gpu_child_argv(const GpuChildArgs& args);
GpuQuery query_gpus(ProcessRunner& runner, const GpuChildArgs& args, std::chrono::milliseconds timeout);

// main() of the child: argv after kGpuSnapshotChildFlag. Prints the snapshot, returns the exit code.
int gpu_snapshot_child_main(const std::vector<std::string>& args);

// readlink(/proc/self/exe)
std::string self_executable();

}  // namespace safe
