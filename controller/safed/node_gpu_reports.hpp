// Each node's newest GPU grid (common/gpu_grid.hpp) as its health checker sent it, kept in memory:
// it is the checker's last word, sent again at every run (health.interval_s), so a restarted or
// newly active safed has it back within one interval. GET /api/v1/node-gpus shows them all, for
// the REST bridge's GET /api/v1/gpu-health (the web console's cluster page).
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/gpu_grid.hpp"
#include "common/result.hpp"

namespace safe {

class NodeGpuReports {
 public:
  // `is_node`: whether Slurm has a node of that name (only those are kept: memory stays bounded
  // by the cluster's size whatever an admin's credential sends).
  explicit NodeGpuReports(std::function<bool(const std::string&)> is_node) : is_node_(std::move(is_node)) {}

  // Keeps `report` as its node's newest, received at `now`; an error for a node Slurm does not have.
  Status put(const NodeGpuReport& report, long long now);
  // {"items": [{"node", "received", "time", "backend", "checks", "gpus", "gpu_count", "unknown"}]},
  // by node name.
  std::string render_json() const;

 private:
  struct Kept {
    long long received = 0;
    NodeGpuReport report;
  };
  std::function<bool(const std::string&)> is_node_;
  mutable std::mutex mutex_;
  std::map<std::string, Kept> reports_;
};

}  // namespace safe
