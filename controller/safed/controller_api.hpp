// safed's HTTP API as a function of a request, so routing and who may see what are unit-tested
// without sockets: /healthz and /metrics are open (cluster-wide counts, no user's data); every
// /api/v1 route needs the credentials Slurm accepts (munge, Slurm JWT) and shows a user only their
// own jobs and evidence, an admin (auth.admins) everything; only an admin may change anything
// (the nodes' health checkers, which send their GPU grids as root, are admins: each grid comes in
// the munge credential that signs it, the request's body, not with an Authorization header).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/authenticator.hpp"
#include "common/gpu_grid.hpp"
#include "common/http_service.hpp"
#include "common/result.hpp"

namespace safe {

// What the API reads and does. safed implements each under the lock that guards the planner;
// `user` set: only that uid's jobs, nullopt: all (an admin).
struct ControllerData {
  std::function<std::string()> metrics;
  std::function<std::string(std::optional<std::uint32_t> user)> status;
  std::function<std::string(bool include_finished, std::optional<std::uint32_t> user)> jobs;
  // "" when there is no such job visible to `user`.
  std::function<std::string(std::uint32_t id, std::optional<long long> submitted, std::optional<std::uint32_t> user)> job;
  // The workspaces: quota, GPUs in use, ETTR and time lost (status_report.hpp); the same for every
  // user, as in the status document.
  std::function<std::string()> workspaces;
  // ETTR per workspace of the jobs that ended in each `step` seconds from `since` (ettr_history.hpp).
  std::function<std::string(long long since, long long step)> ettr_history;
  // Failovers whose fault came at or after `since` (history_report.hpp).
  std::function<std::string(long long since, std::optional<std::uint32_t> user)> failovers;
  // A node's faults at or after `since` ("" node: the cluster's newest).
  std::function<std::string(const std::string& node, long long since)> node_faults;
  // Each node's newest GPU grid (node_gpu_reports.hpp), and keeping one its checker sent.
  std::function<std::string()> node_gpus;
  std::function<Result<bool>(const NodeGpuReport& report)> put_node_gpus;  // false: a newer one is kept
  // Ends a node's quarantine, or says why not.
  std::function<Status(const std::string& node)> release_node;
};

class ControllerApi {
 public:
  ControllerApi(const Authenticator& auth, ControllerData data) : auth_(auth), data_(std::move(data)) {}
  HttpResponse handle(const HttpRequest& request) const;
  // Routes answered on the event thread: cheap and never blocking.
  static bool is_inline(const HttpRequest& request) { return request.path == "/healthz"; }

 private:
  HttpResponse put_node_gpus(const HttpRequest& request, const std::string& node) const;
  const Authenticator& auth_;
  ControllerData data_;
};

}  // namespace safe
