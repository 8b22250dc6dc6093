// The real SlurmClient: libslurm RPCs to slurmctld (SLURM_CONF selects the cluster), reading
// through safed's libslurm reader. Job lists are cached for a short time, so a burst of API reads
// costs slurmctld one RPC, not one each.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>

#include "controller/safed/slurm_client.hpp"
#include "kube-bridge/slurm_client.hpp"

namespace safe::bridge {

class LibSlurmClient : public SlurmClient {
 public:
  explicit LibSlurmClient(std::chrono::milliseconds cache_ttl = std::chrono::milliseconds(1000));
  ~LibSlurmClient() override;
  SlurmResult<std::uint32_t> submit(const SlurmJobRequest& request) override;
  SlurmResult<JobSnapshot> jobs() override;
  SlurmResult<std::vector<SlurmNode>> nodes() override;
  SlurmResult<std::vector<SlurmLicense>> licenses() override;
  SlurmResult<bool> cancel(std::uint32_t job_id) override;

 private:
  std::chrono::milliseconds ttl_;
  std::mutex mutex_;  // guards everything below, and every libslurm call
  std::unique_ptr<safe::SlurmClient> reader_;
  std::chrono::steady_clock::time_point jobs_at_{};
  std::shared_ptr<const std::vector<SlurmJob>> jobs_;
  std::chrono::steady_clock::time_point nodes_at_{};
  std::shared_ptr<const std::vector<SlurmNode>> nodes_;
};

}  // namespace safe::bridge
