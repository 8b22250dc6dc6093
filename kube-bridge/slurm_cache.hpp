// The bridge's Slurm: the seam's reader and submitter (common/slurm/client.hpp) behind one lock,
// with the job list and the node list kept for a short time, so that a burst of REST requests
// costs slurmctld one RPC. The job list is a snapshot shared by every reader of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "common/slurm/client.hpp"

namespace safe::bridge {

using JobSnapshot = std::shared_ptr<const std::vector<SlurmJob>>;

class SlurmCache {
 public:
  // `ttl` 0: every read goes to Slurm.
  SlurmCache(SlurmReader& reader, SlurmSubmitter& submitter, std::chrono::milliseconds ttl)
      : reader_(reader), submitter_(submitter), ttl_(ttl) {}

  // A new snapshot object whenever the list was read again from Slurm.
  Result<JobSnapshot> jobs();
  Result<std::vector<SlurmNode>> nodes();
  Result<std::vector<SlurmLicense>> licenses();
  // Both make the next read of the job list go to Slurm.
  Result<std::uint32_t> submit(const SlurmJobRequest& request);
  Status cancel(std::uint32_t job_id);

 private:
  SlurmReader& reader_;
  SlurmSubmitter& submitter_;
  std::chrono::milliseconds ttl_;
  std::mutex mutex_;  // libslurm's client keeps state between calls; one call at a time
  JobSnapshot jobs_;
  std::chrono::steady_clock::time_point jobs_at_;
  std::shared_ptr<const std::vector<SlurmNode>> nodes_;
  std::chrono::steady_clock::time_point nodes_at_;
};

}  // namespace safe::bridge
