#include "kube-bridge/slurm_cache.hpp"

namespace safe::bridge {

Result<JobSnapshot> SlurmCache::jobs() {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (jobs_ && now - jobs_at_ < ttl_) return jobs_;
  auto read = reader_.load_jobs();
  if (!read) return Error{read.error()};
  jobs_ = std::make_shared<const std::vector<SlurmJob>>(std::move(*read));
  jobs_at_ = now;
  return jobs_;
}

Result<std::vector<SlurmNode>> SlurmCache::nodes() {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (nodes_ && now - nodes_at_ < ttl_) return *nodes_;
  auto read = reader_.load_nodes();
  if (!read) return Error{read.error()};
  nodes_ = std::make_shared<const std::vector<SlurmNode>>(std::move(*read));
  nodes_at_ = now;
  return *nodes_;
}

Result<std::vector<SlurmLicense>> SlurmCache::licenses() {
  std::lock_guard lock(mutex_);
  return reader_.load_licenses();
}

Result<std::uint32_t> SlurmCache::submit(const SlurmJobRequest& request) {
  std::lock_guard lock(mutex_);
  jobs_.reset();  // the next read sees the new job
  return submitter_.submit(request);
}

Status SlurmCache::cancel(std::uint32_t job_id) {
  std::lock_guard lock(mutex_);
  jobs_.reset();
  return submitter_.cancel(job_id);
}

}  // namespace safe::bridge
