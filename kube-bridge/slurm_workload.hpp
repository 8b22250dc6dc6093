// A workload on the Slurm target: how a spec becomes a batch job submitted as its user, and how
// a Slurm job reads back as a workload. The job carries SaFE's options in its SPANK environment
// exactly as sbatch --safe-* puts them there, so job_submit_safe applies the same policy.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/slurm/client.hpp"
#include "common/user_directory.hpp"
#include "kube-bridge/workload_phase.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {

// Marks the bridge's jobs in their Comment, followed by a JSON record (labels).
constexpr std::string_view kBridgeCommentPrefix = "safe-bridge:";

SlurmJobRequest slurm_job_request(const WorkloadSpec& spec, const UserRecord& user, const std::string& work_dir);

// One replica's job of a service (kind service): the spec's command on one node, with
// SAFE_SERVICE_NAME, SAFE_SERVICE_PORT and SAFE_REPLICA, no retries (the bridge restarts it), and
// the service's mark in its Comment.
SlurmJobRequest replica_job_request(const WorkloadSpec& spec, const UserRecord& user, const std::string& work_dir, int replica,
                                    int port, const std::vector<std::string>& excluded_nodes);

// The sbatch-style SPANK entries for the options a spec sets.
std::vector<std::string> spank_env_for(const SafeOptions& options);

// "slurm-123" <-> 123; nullopt for anything else (including traversal attempts).
std::string slurm_workload_id(std::uint32_t job_id);
std::optional<std::uint32_t> parse_slurm_workload_id(std::string_view id);

// The workload's phase, from Slurm's job state: Pending, Running, Succeeded, Failed, Stopped.
WorkloadPhase workload_phase(const SlurmJob& job);

struct BridgeRecord {
  std::map<std::string, std::string> labels;
  // A service's replica job (service_controller.hpp): the service's name and the replica's index;
  // such a job is shown as part of its service, not as a workload of its own.
  std::string service;
  int replica = -1;
  int port = 0;  // the replica job's SAFE_SERVICE_PORT
};
// nullopt when the job was not made by the bridge.
std::optional<BridgeRecord> parse_bridge_comment(std::string_view comment);

// The job's output file with Slurm's patterns (%j, %u, %x, %%) filled in.
std::string expand_output_path(const SlurmJob& job, const std::string& user_name);

}  // namespace safe::bridge
