// Sends the node's GPU grid (common/gpu_grid.hpp) to safed after each periodic run of the health
// checker, for the web console's cluster page. The run's checks, its drain decision and its
// report never wait on it: it comes after them all, waits at most 2 s for safed, and a failure
// is one line on stderr.
#pragma once

#include <string>

#include "common/config.hpp"
#include "common/gpu_grid.hpp"
#include "common/result.hpp"

namespace safe {

// health.controller_url; else the active safed as etcd has it (controller.ha); else
// http://controller.listen.
Result<std::string> gpu_grid_url(const SafeConfig& config);

// POST URL/api/v1/nodes/NODE/gpus, the body a munge credential of this process's user (root,
// under slurmd or systemd: an admin of safed's, auth.admins) that carries the grid.
Status send_gpu_grid(const std::string& url, const NodeGpuReport& report);

}  // namespace safe
