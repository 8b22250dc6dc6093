// A node's GPU grid: which of its GPUs failed which per-GPU health check in the checker's last
// run. safe-healthcheck sends it to safed after each periodic run (POST /api/v1/nodes/NAME/gpus);
// safed keeps each node's newest in memory and the REST bridge shows them (GET /api/v1/gpu-health,
// the web console's cluster page). One JSON format, written and read here.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.hpp"

namespace safe {

struct GpuGridRow {
  int index = 0;
  std::string bus_id;
  std::vector<std::pair<std::string, std::string>> failed;  // check, detail; empty: every check passed
};

struct GpuGrid {
  std::vector<std::string> checks;  // the per-GPU checks that judged each GPU, in order
  std::vector<GpuGridRow> gpus;     // by index
  std::string gpu_count;            // the gpu_count check's detail when it fails (a GPU missing)
  std::string unknown;              // why no GPU could be judged (query timed out, library unusable)
};

// One node's grid as the checker sends it: the node, when it ran, the GPU backend, the grid.
struct NodeGpuReport {
  std::string node;
  long long time = 0;  // unix seconds of the run
  std::string backend;
  GpuGrid grid;
};

// A text of the grid (a failure's detail, why nothing was judged) as the checker sends it: valid
// UTF-8, at most 256 bytes (a cut marked "..."), so that a long error never gets a whole grid
// refused.
std::string clip_grid_text(std::string_view text);

std::string to_json(const NodeGpuReport& report);
// What a checker sent, checked: a node name Slurm could have, at most 64 GPUs (each index once)
// and 32 checks, each text at most 1,024 bytes; an error that says what is wrong otherwise.
Result<NodeGpuReport> parse_node_gpu_report(std::string_view text);

}  // namespace safe
