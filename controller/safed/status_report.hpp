// What safed reports: Prometheus metrics and the /api/v1 JSON documents, rendered from the
// planner's state (callers hold the lock that guards it) and the state store.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "controller/safed/failover_planner.hpp"
#include "controller/safed/lost_work.hpp"

namespace safe {

struct ControllerHealth {
  long long started = 0;
  long long last_pass = 0;      // unix time of the last complete reconcile pass
  double last_pass_ms = 0;
  long long passes = 0;         // complete reconcile passes since start (tests count passes, not seconds)
  long long failed_passes = 0;  // passes rolled back (an error, a state store that cannot be written)
  bool slurm_ok = false;
  std::string slurm_error;
  std::vector<SlurmLicense> licenses;
  // dead-node detection (DeadNodeDetector), as of its last probe round
  std::size_t probe_targets = 0;
  double probe_round_ms = 0;
  long long nodes_downed = 0, nodes_resumed = 0;  // since safed started
  // With controller.ha: "active" or "standby", and the active instance's API URL as etcd has it;
  // "single" without.
  std::string role = "single";
  std::string active_url;
  long long journal_position = 0;  // the last journal entry the state store holds
  std::string config_sha256;       // of the safe.yaml safed runs with (read at start or on SIGHUP)
};

std::string render_metrics(FailoverPlanner& planner, const ControllerHealth& health, long long now);
// The API documents show jobs to their owners: `user` set, only that uid's jobs (and their
// evidence); nullopt, every job (an administrator).
std::string render_status_json(FailoverPlanner& planner, const ControllerHealth& health, long long now,
                               std::optional<std::uint32_t> user);
// The workspaces as the status document has them, as {"items": [...]} (GET /api/v1/workspaces).
std::string render_workspaces_json(FailoverPlanner& planner, const ControllerHealth& health, long long now);
std::string render_jobs_json(StateStore& store, bool include_finished, std::optional<std::uint32_t> user);
// The newest job with this id (or the one whose key holds `submitted`) that `user` may see; ""
// when there is none (unknown and someone else's read the same).
std::string render_job_json(StateStore& store, std::uint32_t job_id, std::optional<long long> submitted,
                            std::optional<std::uint32_t> user);

// ETTR of one workspace: productive run time / wall time since its jobs first ran, over its SaFE
// jobs that ran (Meta's definition: queueing before a job first ran is not lost).
std::map<std::string, WorkspaceTime> workspace_times(const FailoverPlanner& planner, long long now);
// A workspace as a metric label: jobs in none get "(none)", which no workspace can be named (an
// empty label value is the same as no label to Prometheus).
std::string workspace_label(const std::string& workspace);

}  // namespace safe
