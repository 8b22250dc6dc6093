// The bridge's view of Slurm: submit, list, cancel; a seam over libslurm so the REST layer is
// unit-tested with a fake. What it reads is SaFE's one Slurm model (common/slurm_model.hpp).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/slurm_model.hpp"

namespace safe::bridge {

struct SlurmJobRequest {
  std::string name;
  std::string script;  // the batch script, starting with #!
  uid_t uid = 0;
  gid_t gid = 0;
  std::string work_dir;
  std::string std_out;  // may hold %j
  int nodes = 1;
  int gpus_per_node = 0;
  int cpus_per_task = 1;
  long long memory_mb = 0;
  int time_limit_minutes = 0;
  std::vector<std::string> environment;  // NAME=VALUE for the job (SLURM_SPANK_* included, as sbatch)
  std::vector<std::string> spank_env;    // _SLURM_SPANK_OPTION_safe_safe_*=VALUE, as sbatch sends them
  std::vector<std::string> excluded_nodes;
  std::string comment;  // the bridge's record (labels); see workload_record.hpp
};

using JobSnapshot = std::shared_ptr<const std::vector<SlurmJob>>;

template <typename T>
struct SlurmResult {
  std::optional<T> value;
  std::string error;  // what failed, for the API's error body
  bool access_denied = false;  // Slurm's ESLURM_ACCESS_DENIED: job_submit_safe refused the job
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  // On failure `error` holds Slurm's message, including the job_submit plugin's.
  virtual SlurmResult<std::uint32_t> submit(const SlurmJobRequest& request) = 0;
  // A snapshot shared by all readers; a new object whenever it was refreshed from slurmctld.
  virtual SlurmResult<JobSnapshot> jobs() = 0;
  virtual SlurmResult<std::vector<SlurmNode>> nodes() = 0;
  virtual SlurmResult<std::vector<SlurmLicense>> licenses() = 0;
  virtual SlurmResult<bool> cancel(std::uint32_t job_id) = 0;
};

}  // namespace safe::bridge
