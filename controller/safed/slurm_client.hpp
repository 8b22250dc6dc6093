// What SaFE's daemons read from and do to Slurm: the model's structs (common/slurm_model.hpp) and
// one small interface: libslurm in safed, safectl and the REST bridge (libslurm_client.cpp, the
// one libslurm reader), a fake in unit tests and benchmarks.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/batch_output_path.hpp"
#include "common/result.hpp"
#include "common/slurm_model.hpp"

namespace safe {

// A change to one job (scontrol update job): only the set fields are sent.
struct JobChange {
  std::uint32_t id = 0;
  std::optional<std::string> exc_nodes;
  std::optional<std::string> req_nodes;   // "" clears the job's required nodes
  std::optional<std::time_t> start_time;  // BeginTime; now = start at once
  std::optional<std::string> admin_comment;
  std::optional<bool> hold;                // true: priority 0 (held); false: release
};

class SlurmClient {
 public:
  virtual ~SlurmClient() = default;
  // Full lists; an error (what could not be read, and Slurm's reason) when Slurm could not be
  // read: callers then act on nothing.
  virtual Result<std::vector<SlurmJob>> load_jobs() = 0;
  virtual Result<std::vector<SlurmNode>> load_nodes() = 0;
  virtual Result<std::vector<SlurmLicense>> load_licenses() = 0;
  virtual Result<std::vector<SlurmPartition>> load_partitions() = 0;
  // Each fails with Slurm's error text.
  virtual Status requeue(std::uint32_t job_id) = 0;
  virtual Status update_job(const JobChange& change) = 0;
  // Sends `signo` to the batch shell and every step.
  virtual Status signal_job(std::uint32_t job_id, int signo) = 0;
  virtual Status drain_node(const std::string& node, const std::string& reason) = 0;
  virtual Status resume_node(const std::string& node) = 0;
  // Sets the node DOWN: Slurm ends (or requeues) the jobs on it at once.
  virtual Status down_node(const std::string& node, const std::string& reason) = 0;
  // How this Slurm's slurmstepd names output files (its release decides).
  virtual OutputPatternDialect output_pattern_dialect() const = 0;
};

}  // namespace safe
