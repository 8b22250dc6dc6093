// The Slurm seam: what SaFE's daemons ask of Slurm, in SaFE's one Slurm model (model.hpp), split
// by what each caller needs. safed reads the cluster and acts on jobs and nodes; the REST bridge
// reads the cluster and submits and cancels jobs; the node programs drain and resume their own
// node (node_control.hpp, through scontrol). One implementation talks to libslurm
// (libslurm.cpp): every call whose signature differs between Slurm releases is there. The tests
// use one fake for all of it (tests/unit/fake_slurm.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/batch_output_path.hpp"
#include "common/result.hpp"
#include "common/slurm/model.hpp"

namespace safe {

// A change to one job (scontrol update job): only the set fields are sent.
struct JobChange {
  std::uint32_t id = 0;
  std::optional<std::string> exc_nodes;
  std::optional<std::string> req_nodes;   // "" clears the job's required nodes
  std::optional<std::time_t> start_time;  // BeginTime; now = start at once
  std::optional<std::string> admin_comment;
  std::optional<bool> hold;                // true: priority 0 (held); false: release
  std::optional<std::string> reservation;  // "" takes the job out of its reservation
  std::optional<std::uint32_t> num_nodes;  // a pending job's node count (-N): an elastic job's resize
};

// A reservation safed keeps (the hot spares'): created when it does not exist, else its nodes and
// users replaced. Starts now, never ends; IGNORE_JOBS (a node may join while a job winds down on
// it) and NO_HOLD_JOBS_AFTER_END (an administrator who deletes it holds no job).
struct ReservationChange {
  std::string name;
  std::string nodes;  // host list, not empty
  std::string users;  // comma-separated user names
  bool create = false;
};

// A batch job as the bridge submits it (sbatch's job description).
struct SlurmJobRequest {
  std::string name;
  std::string script;  // the batch script, starting with #!
  uid_t uid = 0;
  gid_t gid = 0;
  std::string work_dir;
  std::string std_out;  // may hold %j
  int nodes = 1;
  // One task per node (-n NODES --ntasks-per-node=1), unless elastic: a job SaFE may resize asks
  // for nodes only (job_submit refuses a task count), and its script's srun gives one per node.
  bool elastic = false;
  int gpus_per_node = 0;
  int cpus_per_task = 1;
  long long memory_mb = 0;
  int time_limit_minutes = 0;
  std::vector<std::string> environment;  // NAME=VALUE for the job (SLURM_SPANK_* included, as sbatch)
  std::vector<std::string> spank_env;    // _SLURM_SPANK_OPTION_safe_safe_*=VALUE, as sbatch sends them
  std::vector<std::string> excluded_nodes;
  std::string comment;  // the bridge's record (labels); see workload_record.hpp
};

// Reading the cluster. Full lists, or an error (what could not be read, and Slurm's reason):
// callers then act on nothing.
class SlurmReader {
 public:
  virtual ~SlurmReader() = default;
  virtual Result<std::vector<SlurmJob>> load_jobs() = 0;
  virtual Result<std::vector<SlurmNode>> load_nodes() = 0;
  virtual Result<std::vector<SlurmLicense>> load_licenses() = 0;
  virtual Result<std::vector<SlurmPartition>> load_partitions() = 0;
  virtual Result<std::vector<SlurmReservation>> load_reservations() = 0;
  // How this Slurm's slurmstepd names output files (its release decides).
  virtual OutputPatternDialect output_pattern_dialect() const = 0;
};

// Acting on jobs and nodes (safed). Each fails with Slurm's error text.
class SlurmActions {
 public:
  virtual ~SlurmActions() = default;
  virtual Status requeue(std::uint32_t job_id) = 0;
  virtual Status update_job(const JobChange& change) = 0;
  // Sends `signo` to the batch shell and every step.
  virtual Status signal_job(std::uint32_t job_id, int signo) = 0;
  virtual Status drain_node(const std::string& node, const std::string& reason) = 0;
  virtual Status resume_node(const std::string& node) = 0;
  // Sets the node DOWN and DRAIN: Slurm ends (or requeues) the jobs on it at once, and the node
  // stays out of service when its slurmd registers again (even with ReturnToService=2) until it
  // is resumed.
  virtual Status down_node(const std::string& node, const std::string& reason) = 0;
  virtual Status put_reservation(const ReservationChange& change) = 0;
};

// Submitting and cancelling jobs (the REST bridge).
class SlurmSubmitter {
 public:
  virtual ~SlurmSubmitter() = default;
  // The new job's id. Fails with Slurm's message (the job_submit plugin's included); `refused`
  // when Slurm denied the job (ESLURM_ACCESS_DENIED: job_submit_safe's policy) rather than failed.
  virtual Result<std::uint32_t> submit(const SlurmJobRequest& request) = 0;
  // Kills the job; a job that already ended is cancelled already.
  virtual Status cancel(std::uint32_t job_id) = 0;
};

// All of it: what libslurm offers.
class SlurmClient : public SlurmReader, public SlurmActions, public SlurmSubmitter {};

}  // namespace safe
