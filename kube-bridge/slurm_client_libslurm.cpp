// The libslurm boundary. Copies Slurm's structs into the plain ones of slurm_client.hpp; nothing
// of libslurm leaks past this file. libslurm is called under one mutex: its RPC layer is
// thread-safe, but job lists are cached and refreshed by one thread at a time anyway.
#include "kube-bridge/slurm_client_libslurm.hpp"

#include <csignal>
#include <cstring>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

namespace safe::bridge {
namespace {

std::string text(const char* s) { return s ? s : ""; }

std::string job_state_name(uint32_t state) {
  static const char* const kNames[] = {"PENDING", "RUNNING", "SUSPENDED", "COMPLETED", "CANCELLED", "FAILED",
                                       "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"};
  uint32_t base = state & JOB_STATE_BASE;
  std::string name = base < std::size(kNames) ? kNames[base] : "UNKNOWN";
  if (state & JOB_REQUEUE) name = "REQUEUED";
  return name;
}

std::string node_state_name(uint32_t state) {
  static const char* const kNames[] = {"UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE"};
  uint32_t base = state & NODE_STATE_BASE;
  std::string name = base < std::size(kNames) ? kNames[base] : "UNKNOWN";
  if (state & NODE_STATE_DRAIN) name += "+DRAIN";
  if (state & NODE_STATE_FAIL) name += "+FAIL";
  if (state & NODE_STATE_NO_RESPOND) name += "+NOT_RESPONDING";
  return name;
}

std::string reason_name(uint32_t reason) {
  // The reasons a workload's user acts on; others by number (slurm.h's enum job_state_reason).
  switch (reason) {
    case WAIT_NO_REASON: return "";
    case WAIT_PRIORITY: return "Priority";
    case WAIT_RESOURCES: return "Resources";
    case WAIT_LICENSES: return "Licenses";
    case WAIT_HELD: return "JobHeldAdmin";
    case WAIT_HELD_USER: return "JobHeldUser";
    case WAIT_TIME: return "BeginTime";
    case WAIT_DEPENDENCY: return "Dependency";
    case FAIL_LAUNCH: return "JobLaunchFailure";
    case FAIL_EXIT_CODE: return "NonZeroExitCode";
    case FAIL_TIMEOUT: return "TimeLimit";
    case FAIL_DOWN_NODE: return "NodeDown";
    case FAIL_OOM: return "OutOfMemory";
    case WAIT_PART_NODE_LIMIT: return "PartitionNodeLimit";
    case WAIT_PART_TIME_LIMIT: return "PartitionTimeLimit";
    default: return "reason#" + std::to_string(reason);
  }
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

std::string last_error() { return slurm_strerror(slurm_get_errno()); }

}  // namespace

LibSlurmClient::LibSlurmClient(std::chrono::milliseconds cache_ttl) : ttl_(cache_ttl) { slurm_init(nullptr); }
LibSlurmClient::~LibSlurmClient() { slurm_fini(); }

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
    return {std::nullopt, slurm_strerror(e), e, e == ESLURM_ACCESS_DENIED};
  }
  std::uint32_t id = resp->job_id;
  slurm_free_submit_response_response_msg(resp);
  jobs_.reset();  // the next read sees the new job
  return {id, "", 0, false};
}

SlurmResult<JobSnapshot> LibSlurmClient::jobs() {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (jobs_ && now - jobs_at_ < ttl_) return {jobs_, "", 0};
  job_info_msg_t* msg = nullptr;
  if (slurm_load_jobs(0, &msg, SHOW_ALL | SHOW_DETAIL) != SLURM_SUCCESS) return {std::nullopt, last_error(), slurm_get_errno()};
  auto out = std::make_shared<std::vector<SlurmJob>>();
  out->reserve(msg->record_count);
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    SlurmJob job;
    job.id = j.job_id;
    job.name = text(j.name);
    job.uid = j.user_id;
    job.state = job_state_name(j.job_state);
    job.reason = reason_name(j.state_reason);
    if (WIFEXITED(j.exit_code)) job.exit_code = WEXITSTATUS(j.exit_code);
    else if (WIFSIGNALED(j.exit_code)) job.exit_code = 128 + WTERMSIG(j.exit_code);
    job.restart_count = j.restart_cnt;
    job.num_nodes = static_cast<int>(j.num_nodes);
    job.nodes = text(j.nodes);
    job.exc_nodes = text(j.exc_nodes);
    job.admin_comment = text(j.admin_comment);
    job.comment = text(j.comment);
    job.std_out = text(j.std_out);
    job.work_dir = text(j.work_dir);
    job.partition = text(j.partition);
    job.submit_time = j.submit_time;
    job.start_time = j.start_time;
    job.end_time = j.end_time;
    out->push_back(std::move(job));
  }
  slurm_free_job_info_msg(msg);
  jobs_ = out;
  jobs_at_ = now;
  return {jobs_, "", 0};
}

SlurmResult<std::vector<SlurmNode>> LibSlurmClient::nodes() {
  std::lock_guard lock(mutex_);
  auto now = std::chrono::steady_clock::now();
  if (nodes_ && now - nodes_at_ < ttl_) return {*nodes_, "", 0};
  node_info_msg_t* msg = nullptr;
  if (slurm_load_node(0, &msg, SHOW_ALL) != SLURM_SUCCESS) return {std::nullopt, last_error(), slurm_get_errno()};
  auto out = std::make_shared<std::vector<SlurmNode>>();
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const node_info_t& n = msg->node_array[i];
    if (!n.name) continue;
    out->push_back({text(n.name), node_state_name(n.node_state), text(n.reason), text(n.gres), n.cpus});
  }
  slurm_free_node_info_msg(msg);
  nodes_ = out;
  nodes_at_ = now;
  return {*nodes_, "", 0};
}

SlurmResult<std::vector<SlurmLicense>> LibSlurmClient::licenses() {
  std::lock_guard lock(mutex_);
  license_info_msg_t* msg = nullptr;
  if (slurm_load_licenses(0, &msg, 0) != SLURM_SUCCESS) return {std::nullopt, last_error(), slurm_get_errno()};
  std::vector<SlurmLicense> out;
  for (uint32_t i = 0; i < msg->num_lic; ++i)
    out.push_back({text(msg->lic_array[i].name), static_cast<int>(msg->lic_array[i].total),
                   static_cast<int>(msg->lic_array[i].in_use)});
  slurm_free_license_info_msg(msg);
  return {out, "", 0};
}

SlurmResult<bool> LibSlurmClient::cancel(std::uint32_t job_id) {
  std::lock_guard lock(mutex_);
  jobs_.reset();
  if (slurm_kill_job(job_id, SIGKILL, 0) != SLURM_SUCCESS) {
    int e = slurm_get_errno();
    // Already finished: cancelling is done.
    if (e == ESLURM_ALREADY_DONE) return {true, "", 0};
    return {std::nullopt, slurm_strerror(e), e};
  }
  return {true, "", 0};
}

}  // namespace safe::bridge
