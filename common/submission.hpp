// A job submission as slurmctld's job_submit plugin sees it, and what SaFE makes of it: the
// options read back from the job's SPANK environment, the GPU count, the workspace policy, the
// metadata record and the rewritten SPANK environment. Pure: the plugin copies Slurm's fields in
// and applies the result, so everything here is unit-tested without slurmctld.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/admission.hpp"
#include "common/cluster_shape.hpp"
#include "common/gpu_request.hpp"

namespace safe {

struct Submission {
  long long now = 0;                   // unix seconds when job_submit saw it (the record's sub=)
  std::vector<std::string> spank_env;  // job_desc->spank_job_env
  std::string partition, account, qos, licenses, admin_comment;
  std::string reservation;  // --reservation, a comma-separated list
  GpuRequest gpus;
  bool expedited_requeue = false;  // --requeue=expedite (Slurm 25.11 and later)
  bool batch = true;               // sbatch (a script); false: salloc or srun's own allocation
  bool required_nodes = false;     // -w/--nodelist
  // A component of a heterogeneous job: its offset, and the quota workspaces the components
  // before it were charged GPUs in. Slurm tests each component's licenses on its own and then
  // starts them all together, so two components charged to one quota could together exceed it.
  struct HetComponent {
    std::uint32_t offset = 0;
    std::vector<std::string> quota_charged;
  };
  std::optional<HetComponent> het;
};

struct SubmissionChanges {
  std::optional<std::string> partition, account, qos, licenses, admin_comment;
  // A later component's quota license, for its heterogeneous job's leader (component 0): Slurm
  // (from 25.11 at least) refuses licenses on any other component, even those job_submit added.
  std::optional<std::string> leader_licenses;
  std::optional<std::uint32_t> max_nodes;  // bounds the node count the GPU charge was made for
  bool requeue_with_append = false;
  // The job's SPANK environment with SaFE's options set to their effective values, so the
  // prolog, the job's tasks and the controller all see what policy decided.
  std::optional<std::vector<std::string>> spank_env;
  // "NAME=VALUE" set in a batch job's environment (replacing the job's own NAME).
  std::optional<std::string> environment_entry;
};

struct SubmissionReview {
  bool accepted = false;
  std::string message;  // for the user: why it was rejected, or a notice (e.g. a capped value)
  SubmissionChanges changes;
  JobSettings settings;
  std::string quota_charged;  // the workspace whose quota the job was charged GPUs in, if any
};

// `shape`: the cluster shape safed published (nullptr when there is none): a workspace with a
// GPU quota cannot charge a job without it, nor can a job that names no partition be placed in a
// workspace by its (default) partition.
SubmissionReview review_submission(const SafeConfig& config, const Submission& submission, const JobUser& user,
                                   const ClusterShape* shape);

// An `scontrol update job` request, with only the fields it changes set. In Slurm 22.05 the
// plugin cannot read the job being updated (its record is private to slurmctld), so the rules
// are the ones that hold whatever the job's workspace is.
struct JobUpdate {
  std::optional<std::string> licenses, partition, reservation;
  // tres_per_*, the node/task counts they multiply with, or what makes a job whole-node
  // (OverSubscribe, core specialization)
  bool changes_gpu_request = false;
};

// Allowed, or refused with the message for the user. Administrators (root, SlurmUser) may change
// anything: safed moves failing-over jobs into the spare reservations that way.
Status review_update(const SafeConfig& config, const JobUpdate& update, const JobUser& user, bool is_admin);

// `env` with `entry` ("NAME=VALUE") in place of any NAME=... it held, at the end.
std::vector<std::string> with_environment_entry(const std::vector<std::string>& env, const std::string& entry);

// The SPANK environment entries that carry `settings` (one per --safe-* option).
std::vector<std::string> settings_spank_env(const JobSettings& settings);

}  // namespace safe
