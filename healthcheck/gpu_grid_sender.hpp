// Sends the node's GPU grid (common/gpu_grid.hpp) to safed after each periodic run of the health
// checker, for the web console's cluster page. The run's checks and its drain decision never wait
// on it: it comes after them, waits at most 2 s, and a failure only shows in the run's summary.
#pragma once

#include <string>

#include "common/config.hpp"
#include "common/gpu_grid.hpp"
#include "common/result.hpp"

namespace safe {

// health.controller_url; else the active safed as etcd has it (controller.ha); else
// http://controller.listen.
Result<std::string> gpu_grid_url(const SafeConfig& config);

// POST URL/api/v1/nodes/NODE/gpus with a munge credential of this process's user (root, under
// slurmd or systemd: an admin of safed's, auth.admins).
Status send_gpu_grid(const std::string& url, const NodeGpuReport& report);

}  // namespace safe
