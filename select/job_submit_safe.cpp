// job_submit_safe.so: SaFE's admission inside slurmctld. Copies the job's fields into a plain
// Submission, lets common/submission.cpp decide, and applies the result. Runs with slurmctld's
// locks held: no RPCs, no network; the config is one stat() per call unless it changed.
// Nothing thrown may escape; every string given to Slurm comes from Slurm's allocator.
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include "common/cluster_shape_cache.hpp"
#include "common/config_cache.hpp"
#include "common/spare_reservation.hpp"
#include "common/job_user.hpp"
#include "common/submission.hpp"
#include "select/slurm_memory.hpp"

extern "C" {
extern const char plugin_name[] = "SaFE admission (workspaces, GPU quotas, retries)";
extern const char plugin_type[] = "job_submit/safe";
extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
void slurm_info(const char* fmt, ...);
void slurm_error(const char* fmt, ...);
}

namespace {

// slurmctld's environment may point SaFE at another config ($SAFE_CONFIG), as tests do.
safe::ConfigCache& config_cache() {
  static safe::ConfigCache cache(safe::config_path_from_env());
  return cache;
}

safe::JobUserCache& user_cache() {
  static safe::JobUserCache cache;
  return cache;
}

safe::ClusterShapeCache& shape_cache() {
  static safe::ClusterShapeCache cache;
  return cache;
}

std::shared_ptr<const safe::ClusterShape> current_shape(const safe::SafeConfig& config) {
  std::vector<std::string> log;
  auto shape = shape_cache().get(safe::cluster_shape_path(config.controller.state_dir), std::time(nullptr), log);
  for (const auto& line : log) slurm_info("%s", line.c_str());
  return shape;
}

std::shared_ptr<const safe::SafeConfig> current_config() {
  std::vector<std::string> log;
  auto config = config_cache().get(log);
  for (const auto& line : log) slurm_info("%s", line.c_str());
  return config;
}

std::string text(const char* s) { return s ? s : ""; }
uint32_t count(uint32_t v) { return v == NO_VAL ? 0 : v; }
uint32_t count16(uint16_t v) { return v == NO_VAL16 ? 0 : v; }

safe::Submission read_submission(const job_desc_msg_t* job) {
  safe::Submission s;
  s.now = static_cast<long long>(std::time(nullptr));
  for (uint32_t i = 0; job->spank_job_env && i < job->spank_job_env_size; ++i)
    if (job->spank_job_env[i]) s.spank_env.emplace_back(job->spank_job_env[i]);
  s.partition = text(job->partition);
  s.account = text(job->account);
  s.qos = text(job->qos);
  s.licenses = text(job->licenses);
  s.admin_comment = text(job->admin_comment);
  s.reservation = text(job->reservation);
  s.gpus.tres_per_job = text(job->tres_per_job);
  s.gpus.tres_per_node = text(job->tres_per_node);
  s.gpus.tres_per_task = text(job->tres_per_task);
  s.gpus.tres_per_socket = text(job->tres_per_socket);
  s.gpus.min_nodes = count(job->min_nodes);
  s.gpus.max_nodes = count(job->max_nodes);
  s.gpus.num_tasks = count(job->num_tasks);
  s.gpus.ntasks_per_node = count16(job->ntasks_per_node);
  s.gpus.sockets_per_node = count16(job->sockets_per_node);
  s.gpus.ntasks_per_tres = count16(job->ntasks_per_tres);
  // --exclusive (not =user or =mcs, which share no GPUs) and core specialization get whole nodes.
  s.gpus.exclusive = job->shared == JOB_SHARED_NONE;
  s.gpus.core_spec = job->core_spec != NO_VAL16;
  s.batch = job->script != nullptr;
  s.required_nodes = job->req_nodes != nullptr && job->req_nodes[0] != '\0';
#ifdef EXPEDITED_REQUEUE  // --requeue=expedite, since 25.11
  s.expedited_requeue = (job->bitflags & EXPEDITED_REQUEUE) != 0;
#endif
  return s;
}

// The leader (component 0) of the heterogeneous job whose components this thread is reviewing;
// valid while the RPC's loop over its components runs (see het_quota_charged below).
thread_local job_desc_msg_t* het_leader = nullptr;

void apply_changes(job_desc_msg_t* job, const safe::SubmissionChanges& c) {
  if (c.partition) safe::slurm::replace_string(job->partition, *c.partition);
  if (c.account) safe::slurm::replace_string(job->account, *c.account);
  if (c.qos) safe::slurm::replace_string(job->qos, *c.qos);
  if (c.licenses) safe::slurm::replace_string(job->licenses, *c.licenses);
  if (c.leader_licenses && het_leader) {
    std::string leader = text(het_leader->licenses);
    safe::slurm::replace_string(het_leader->licenses, leader.empty() ? *c.leader_licenses : leader + "," + *c.leader_licenses);
  }
  if (c.admin_comment) safe::slurm::replace_string(job->admin_comment, *c.admin_comment);
  if (c.max_nodes) job->max_nodes = *c.max_nodes;
  if (c.spank_env) safe::slurm::replace_string_array(job->spank_job_env, job->spank_job_env_size, *c.spank_env);
  if (c.environment_entry && job->script) {
    std::vector<std::string> env;
    for (uint32_t i = 0; job->environment && i < job->env_size; ++i)
      if (job->environment[i]) env.emplace_back(job->environment[i]);
    safe::slurm::replace_string_array(job->environment, job->env_size,
                                      safe::with_environment_entry(env, *c.environment_entry));
  }
  if (c.requeue_with_append) {
    job->requeue = 1;
    job->open_mode = OPEN_MODE_APPEND;
  }
}

void set_message(char** err_msg, const std::string& message) {
  if (!err_msg || message.empty()) return;
  if (*err_msg) slurm_xfree(reinterpret_cast<void**>(err_msg));
  *err_msg = safe::slurm::xstrdup(message);
}

// The components of a heterogeneous job pass through job_submit one after another on the thread
// of the RPC that submits them (offset 0, 1, ...; slurmctld's proc_req.c from 22.05 to 26.05), so
// what the earlier components of the job in hand were charged is kept per thread. (22.05 leaves
// het_job_offset 0 on plain jobs: they start afresh, like a first component.)
thread_local std::vector<std::string> het_quota_charged;

int review_job(job_desc_msg_t* job, char** err_msg) {
  // Before the config: without one (unreadable, broken) the spares stay safed's all the same.
  if (std::string spares = safe::named_spare_reservation(text(job->reservation)); !spares.empty()) {
    set_message(err_msg, safe::spare_reservation_refusal(spares));
    return ESLURM_ACCESS_DENIED;
  }
  auto config = current_config();
  if (!config) return SLURM_SUCCESS;  // no config: admit unchanged (logged once by the cache)

  auto user = user_cache().get(job->user_id, std::time(nullptr));
  if (!user) {
    set_message(err_msg, "safe: cannot resolve user id " + std::to_string(job->user_id) +
                             " on the controller; ask an administrator to check NSS on the slurmctld host");
    return SLURM_ERROR;
  }
  auto shape = current_shape(*config);
  safe::Submission submission = read_submission(job);
  if (job->het_job_offset != NO_VAL) {
    if (job->het_job_offset == 0) {
      het_quota_charged.clear();
      het_leader = job;
    }
    submission.het = safe::Submission::HetComponent{job->het_job_offset, het_quota_charged};
  }
  safe::SubmissionReview review = safe::review_submission(*config, submission, *user, shape.get());
  if (submission.het && !review.quota_charged.empty()) het_quota_charged.push_back(review.quota_charged);
  set_message(err_msg, review.message);
  if (!review.accepted) {
    slurm_info("job_submit/safe: rejected a job of %s: %s", user->name.c_str(), review.message.c_str());
    // sbatch prints Slurm's text for this code after our message: a policy refusal reads better
    // as "Access/permission denied" than as "Unspecified error".
    return ESLURM_ACCESS_DENIED;
  }
  apply_changes(job, review.changes);
  return SLURM_SUCCESS;
}

}  // namespace

extern "C" {

int init(void) {
  slurm_info("job_submit/safe: using config %s", config_cache().path().c_str());
  return SLURM_SUCCESS;
}

int fini(void) { return SLURM_SUCCESS; }

int job_submit(job_desc_msg_t* job, uint32_t /*submit_uid*/, char** err_msg) {
  try {
    return review_job(job, err_msg);
  } catch (...) {
    // Fail closed: admitting a job unchecked could break a workspace quota.
    slurm_error("job_submit/safe: internal error while reviewing a job; rejected it");
    set_message(err_msg, "safe: internal error while checking the job; please report it to the administrators");
    return SLURM_ERROR;
  }
}

}  // extern "C"

namespace {

bool is_set(const char* s) { return s != nullptr; }

int review_update_request(job_desc_msg_t* job, uint32_t submit_uid, char** err_msg) {
  // slurmctld runs as SlurmUser: that uid and root are the administrators.
  bool is_admin = submit_uid == 0 || submit_uid == getuid();
  if (!is_admin && is_set(job->reservation)) {
    if (std::string spares = safe::named_spare_reservation(job->reservation); !spares.empty()) {
      if (err_msg) set_message(err_msg, safe::spare_reservation_refusal(spares));
      return ESLURM_ACCESS_DENIED;
    }
  }
  auto config = current_config();
  if (!config) return SLURM_SUCCESS;
  auto user = user_cache().get(submit_uid, std::time(nullptr));
  if (!user) user = safe::JobUser{"uid " + std::to_string(submit_uid), {}};
  safe::JobUpdate update;
  if (is_set(job->licenses)) update.licenses = job->licenses;
  if (is_set(job->partition)) update.partition = job->partition;
  if (is_set(job->reservation)) update.reservation = job->reservation;
  update.changes_gpu_request = is_set(job->tres_per_job) || is_set(job->tres_per_node) ||
                               is_set(job->tres_per_task) || is_set(job->tres_per_socket) ||
                               job->min_nodes != NO_VAL || job->max_nodes != NO_VAL || job->num_tasks != NO_VAL ||
                               job->ntasks_per_node != NO_VAL16 || job->shared != NO_VAL16 ||
                               job->core_spec != NO_VAL16 || job->ntasks_per_tres != NO_VAL16;
  safe::Status allowed = safe::review_update(*config, update, *user, is_admin);
  if (allowed) return SLURM_SUCCESS;
  if (err_msg) set_message(err_msg, allowed.error());
  slurm_info("job_submit/safe: refused an update by %s: %s", user->name.c_str(), allowed.error().c_str());
  return ESLURM_ACCESS_DENIED;
}

}  // namespace

extern "C" {

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
int job_modify(job_desc_msg_t* job, const void*, uint32_t submit_uid, char** err_msg) {
#else
int job_modify(job_desc_msg_t* job, const void*, uint32_t submit_uid) {
  char** err_msg = nullptr;  // 22.05 cannot return a message from job_modify; it is logged
#endif
  try {
    return review_update_request(job, submit_uid, err_msg);
  } catch (...) {
    slurm_error("job_submit/safe: internal error while reviewing a job update; refused it");
    return SLURM_ERROR;
  }
}

}  // extern "C"
