// The libslurm boundary of the bridge. Reading jobs, nodes and licenses goes through SaFE's one
// libslurm reader (controller/safed/libslurm_client.cpp, shared with safed), in SaFE's one Slurm
// model; this file adds the two calls only the bridge makes (submit, cancel) and a short cache. libslurm is called under one mutex: the reader keeps update times between calls,
// and job lists are refreshed by one thread at a time anyway.
#include "kube-bridge/slurm_client_libslurm.hpp"

#include <csignal>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include "controller/safed/libslurm_client.hpp"

namespace safe::bridge {
namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

LibSlurmClient::LibSlurmClient(std::chrono::milliseconds cache_ttl)
    : ttl_(cache_ttl), reader_(make_libslurm_client()) {}
LibSlurmClient::~LibSlurmClient() = default;

SlurmResult<std::uint32_t> LibSlurmClient::submit(const SlurmJobRequest& r) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  std::string tres = r.gpus_per_node > 0 ? "gres:gpu:" + std::to_string(r.gpus_per_node) : "";
  std::string exc;
  for (const auto& n : r.excluded_nodes) exc += (exc.empty() ? "" : ",") + n;
  std::vector<std::string> environment = r.environment;
  if (environment.empty()) environment.push_back("SAFE_BRIDGE=1");  // Slurm refuses a batch job without one
  auto env = c_strings(environment);
  auto spank = c_strings(r.spank_env);

  desc.name = const_cast<char*>(r.name.c_str());
  desc.script = const_cast<char*>(r.script.c_str());
  desc.user_id = r.uid;
  desc.group_id = r.gid;
  desc.work_dir = const_cast<char*>(r.work_dir.c_str());
  desc.std_out = const_cast<char*>(r.std_out.c_str());
  desc.min_nodes = r.nodes;
  desc.max_nodes = r.nodes;
  desc.num_tasks = r.nodes;
  desc.ntasks_per_node = 1;
  desc.cpus_per_task = static_cast<uint16_t>(r.cpus_per_task);
  if (!tres.empty()) desc.tres_per_node = tres.data();
  if (r.memory_mb > 0) desc.pn_min_memory = static_cast<uint64_t>(r.memory_mb);
  if (r.time_limit_minutes > 0) desc.time_limit = static_cast<uint32_t>(r.time_limit_minutes);
  desc.environment = env.data();
  desc.env_size = static_cast<uint32_t>(environment.size());
  if (!r.spank_env.empty()) {
    desc.spank_job_env = spank.data();
    desc.spank_job_env_size = static_cast<uint32_t>(r.spank_env.size());
  }
  if (!exc.empty()) desc.exc_nodes = exc.data();
  if (!r.comment.empty()) desc.comment = const_cast<char*>(r.comment.c_str());

  submit_response_msg_t* resp = nullptr;
  std::lock_guard lock(mutex_);
  if (slurm_submit_batch_job(&desc, &resp) != SLURM_SUCCESS) {
    int e = slurm_get_errno();
    return {std::nullopt, slurm_strerror(e), e == ESLURM_ACCESS_DENIED};
  }
  std::uint32_t id = resp->job_id;
  slurm_free_submit_response_response_msg(resp);
  jobs_.reset();  // the next read sees the new job
  return {id, "", false};
}

SlurmResult<JobSnapshot> LibSlurmClient::jobs() {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (jobs_ && now - jobs_at_ < ttl_) return {jobs_, ""};
  auto read = reader_->load_jobs();
  if (!read) return {std::nullopt, read.error()};
  jobs_ = std::make_shared<const std::vector<SlurmJob>>(std::move(*read));
  jobs_at_ = now;
  return {jobs_, ""};
}

SlurmResult<std::vector<SlurmNode>> LibSlurmClient::nodes() {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (nodes_ && now - nodes_at_ < ttl_) return {*nodes_, ""};
  auto read = reader_->load_nodes();
  if (!read) return {std::nullopt, read.error()};
  nodes_ = std::make_shared<const std::vector<SlurmNode>>(std::move(*read));
  nodes_at_ = now;
  return {*nodes_, ""};
}

SlurmResult<std::vector<SlurmLicense>> LibSlurmClient::licenses() {
  std::lock_guard lock(mutex_);
  auto read = reader_->load_licenses();
  if (!read) return {std::nullopt, read.error()};
  return {std::move(*read), ""};
}

SlurmResult<bool> LibSlurmClient::cancel(std::uint32_t job_id) {
  std::lock_guard lock(mutex_);
  jobs_.reset();
  if (slurm_kill_job(job_id, SIGKILL, 0) != SLURM_SUCCESS) {
    int e = slurm_get_errno();
    // Already finished: cancelling is done.
    if (e == ESLURM_ALREADY_DONE) return {true, ""};
    return {std::nullopt, slurm_strerror(e)};
  }
  return {true, ""};
}

}  // namespace safe::bridge
