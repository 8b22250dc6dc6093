// safed's history: of a Slurm job (GET /api/v1/jobs/ID on the controller: attempts with their
// classification, failovers with MTTR), of all failovers, of a node's faults, the workspaces'
// ETTR now and over time, and the nodes' GPU grids, when a controller is deployed. The bridge never depends
// on it: without an answer, within a short timeout, events come from Slurm alone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "common/json_value.hpp"

namespace safe::bridge {

class ControllerHistory {
 public:
  virtual ~ControllerHistory() = default;
  // safed's JSON document for the job (`submitted`: the sub= of its SaFE record, which tells it
  // from an older job with its id; 0 when unknown), or nullopt (no controller, not tracked, no
  // answer).
  virtual std::optional<std::string> job_history(std::uint32_t job_id, long long submitted) = 0;
  // safed's failovers whose fault came at or after `since`, every job's (the bridge is an admin
  // of safed's and shows each user their own), and a node's faults: GET /api/v1/failovers and
  // /api/v1/node-faults on the controller.
  virtual std::optional<std::string> failovers(long long since) = 0;
  virtual std::optional<std::string> node_faults(const std::string& node, long long since) = 0;
  // The workspaces' ETTR and time lost now, and ETTR per workspace of the jobs that ended in each
  // `step` seconds from `since`: GET /api/v1/workspaces and /api/v1/ettr-history on the controller.
  virtual std::optional<std::string> workspaces() = 0;
  virtual std::optional<std::string> ettr_history(long long since, long long step) = 0;
  // Each node's newest GPU grid from its health checker: GET /api/v1/node-gpus on the controller.
  virtual std::optional<std::string> node_gpus() = 0;
};

// Over libcurl, 0.5 s at most per call, authenticated with a munge credential of the bridge's own
// user (an admin of safed's: the bridge shows each user only their own jobs itself); after a
// failure it stays quiet for 10 s so that a dead controller costs the API nothing. `base_url`
// gives safed's URL for each call ("": none): a fixed one, or the active instance's
// (controller.ha), which changes hands.
class CurlControllerHistory : public ControllerHistory {
 public:
  explicit CurlControllerHistory(std::function<std::string()> base_url) : base_url_(std::move(base_url)) {}
  std::optional<std::string> job_history(std::uint32_t job_id, long long submitted) override;
  std::optional<std::string> failovers(long long since) override;
  std::optional<std::string> node_faults(const std::string& node, long long since) override;
  std::optional<std::string> workspaces() override;
  std::optional<std::string> ettr_history(long long since, long long step) override;
  std::optional<std::string> node_gpus() override;

 private:
  std::optional<std::string> get(const std::string& path);  // path and query on safed
  std::function<std::string()> base_url_;
  std::atomic<long long> quiet_until_ms_{0};
};

// Appends safed's attempts and failovers to `events` as bridge events (Attempt, Failover).
// False when `document` is not safed's job document.
bool append_controller_events(const std::string& document, json_t* events);

}  // namespace safe::bridge
