// Workspace policy for a submitted job: membership, Slurm defaults, retry caps, health level,
// GPU quota. A pure function of the config, the request and the user, so slurmctld's
// job_submit plugin and the REST bridge apply exactly the same rules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "common/safe_options.hpp"

namespace safe {

struct JobUser {
  std::string name;                 // resolved from the job's uid
  std::vector<std::string> groups;  // every group the user is in
};

struct AdmissionRequest {
  SafeOptions options;
  std::string partition;  // as the user gave them; empty when not given
  std::string account;
  std::string qos;
  std::string licenses;
  long long gpus = 0;  // from charge_gpus
  std::string gpus_how;  // how they were counted, for messages
};

// The effective SaFE settings of an admitted job.
struct JobSettings {
  std::string workspace;  // empty: none
  int retries = 0;
  HealthLevel health = HealthLevel::standard;
  std::string ckpt_dir;  // empty: none
  CheckpointSignal ckpt_signal;
  int hang_timeout = 0;
  long long gpus = 0;
  // Shrink and continue (--safe-min-nodes, --safe-node-multiple): 0 when the job is not elastic.
  // full_nodes is the node count it was submitted with, set by the job_submit plugin.
  int min_nodes = 0;
  int node_multiple = 1;
  int full_nodes = 0;
};

struct AdmissionDecision {
  bool accepted = false;
  std::string message;  // rejection reason, or a notice for an accepted job (e.g. a capped value)
  JobSettings settings;
  // Changes to make to the job; unset means leave the field as the user gave it.
  std::optional<std::string> partition;
  std::optional<std::string> account;
  std::optional<std::string> qos;
  std::optional<std::string> licenses;
  bool requeue_with_append = false;  // retries > 0: requeue on, output opened in append mode
};

AdmissionDecision admit_job(const SafeConfig& config, const AdmissionRequest& request, const JobUser& user);

// The workspace a Slurm job belongs to: the one it names, else the one that owns the partition it
// runs in. A partition that belongs to a workspace is that workspace's, whether the job says
// --safe-workspace or -p (or lands there as the default partition): membership, policy and the
// GPU quota apply the same. `default_partition`: Slurm's default, for a job that names none
// (nullptr when not known).
struct WorkspaceChoice {
  const WorkspaceConfig* workspace = nullptr;  // none: not a workspace's job
  std::string partition;                       // where the job will run, "" when not known
  std::string rejection;                       // non-empty: the job is refused, and why
};
WorkspaceChoice choose_workspace(const SafeConfig& config, const SafeOptions& options, const std::string& partition,
                                 const std::string* default_partition, const JobUser& user);

// The license names of a -L/--licenses request, as Slurm tokenizes it: entries split at ',', ';'
// and '|' (any of Slurm's releases), empty ones skipped, the name ending at ':' or '='.
std::vector<std::string> license_names(std::string_view licenses);

// Whether `user` may use workspace `w` (listed by name, or through one of its groups).
bool is_member(const WorkspaceConfig& w, const JobUser& user);

// "safe_ws_ml": the Slurm license that carries workspace ml's GPU quota.
std::string workspace_license(const std::string& workspace);

}  // namespace safe
