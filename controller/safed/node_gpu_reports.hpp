// Each node's newest GPU grid (common/gpu_grid.hpp) as its health checker sent it, kept in memory:
// it is the checker's last word, sent again at every run (health.interval_s), so a restarted or
// newly active safed has it back within one interval. GET /api/v1/node-gpus shows them all, for
// the REST bridge's GET /api/v1/gpu-health (the web console's cluster page).
#pragma once

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/gpu_grid.hpp"
#include "common/result.hpp"

namespace safe {

class NodeGpuReports {
 public:
  // The nodes Slurm has, as of safed's last pass: only their grids are kept (memory stays bounded
  // by the cluster's size whatever an admin's credential sends), and a node gone from Slurm takes
  // its grid with it. Its own lock: the API's workers never wait on a reconcile pass.
  void set_nodes(std::vector<std::string> nodes);
  // Keeps `report` as its node's, received at `now` (true), unless the node's kept grid comes from
  // a later run and arrived in the last 5 minutes (false: the periodic checker and the agent may
  // deliver out of order; a node whose clock went back is not frozen for good); an error for a
  // node Slurm does not have.
  Result<bool> put(const NodeGpuReport& report, long long now);
  // {"items": [{"node", "received", "time", "backend", "checks", "gpus", "gpu_count", "unknown"}]},
  // by node name.
  std::string render_json() const;

 private:
  struct Kept {
    long long received = 0;
    NodeGpuReport report;
  };
  mutable std::mutex mutex_;
  std::set<std::string> nodes_;
  std::map<std::string, Kept> reports_;
};

}  // namespace safe
