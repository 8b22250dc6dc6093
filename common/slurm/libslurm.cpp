// SaFE's one libslurm implementation of the Slurm seam (client.hpp): every libslurm call SaFE
// makes is in this file, so a Slurm release that changes one changes this file only.
#include "common/slurm/libslurm.hpp"

#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <iterator>
#include <mutex>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

// libslurm's allocator (xmalloc.h, not in the public headers).
extern "C" void slurm_xfree(void** item);

namespace safe {
namespace {

std::string text(const char* s) { return s ? s : ""; }

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// What a libslurm call returned, with errno taken at once: libslurm reports why a call failed in
// errno (slurm_get_errno() read it and is gone since 24.11), and any later call may change it.
// Wrap every call: `Call c = called(slurm_x(...));`.
struct Call {
  int rc;
  int error;
  bool ok() const { return rc == SLURM_SUCCESS; }
  std::string text() const { return slurm_strerror(error); }
};
Call called(int rc) { return {rc, rc == SLURM_SUCCESS ? 0 : errno}; }

// A libslurm call's outcome as a Status: Slurm's error text on failure.
Status status_of(Call c) { return c.ok() ? ok_status() : Status(Error{c.text()}); }

// A whole job as the job calls name it: a slurm_step_id_t since 26.05, the job id before.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
slurm_step_id_t whole_job(std::uint32_t job_id) {
  slurm_step_id_t id{};
  id.job_id = job_id;
  id.step_het_comp = NO_VAL;
  id.step_id = NO_VAL;
  return id;
}
#else
std::uint32_t whole_job(std::uint32_t job_id) { return job_id; }
#endif

// The job id in a job description (an update's target) and in a submit's answer: in a
// slurm_step_id_t since 25.11.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
void set_job_id(job_desc_msg_t& d, std::uint32_t job_id) { d.step_id.job_id = job_id; }
std::uint32_t submitted_job_id(const submit_response_msg_t& r) { return r.step_id.job_id; }
#else
void set_job_id(job_desc_msg_t& d, std::uint32_t job_id) { d.job_id = job_id; }
std::uint32_t submitted_job_id(const submit_response_msg_t& r) { return r.job_id; }
#endif

// Frees the name slurm_create_reservation returned: strdup() up to 25.11, xstrdup() from 26.05
// (src/api/update_config.c); the wrong one aborts.
void free_reservation_name(char* name) {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
  slurm_xfree(reinterpret_cast<void**>(&name));
#else
  free(name);
#endif
}

SlurmJobState job_state(uint32_t state) {
  switch (state & JOB_STATE_BASE) {
    case JOB_PENDING: return SlurmJobState::pending;
    case JOB_RUNNING: return SlurmJobState::running;
    case JOB_SUSPENDED: return SlurmJobState::suspended;
    case JOB_COMPLETE: return SlurmJobState::complete;
    case JOB_CANCELLED: return SlurmJobState::cancelled;
    case JOB_FAILED: return SlurmJobState::failed;
    case JOB_TIMEOUT: return SlurmJobState::timeout;
    case JOB_NODE_FAIL: return SlurmJobState::node_fail;
    case JOB_PREEMPTED: return SlurmJobState::preempted;
    case JOB_BOOT_FAIL: return SlurmJobState::boot_fail;
    case JOB_DEADLINE: return SlurmJobState::deadline;
    case JOB_OOM: return SlurmJobState::out_of_memory;
    default: return SlurmJobState::other;
  }
}

std::string reason_name(uint32_t reason) {
  // The reasons a user acts on; others by number (slurm.h's enum job_state_reason).
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

std::string node_state_name(uint32_t state) {
  static const char* const kNames[] = {"UNKNOWN", "DOWN", "IDLE", "ALLOCATED", "ERROR", "MIXED", "FUTURE"};
  uint32_t base = state & NODE_STATE_BASE;
  std::string name = base < std::size(kNames) ? kNames[base] : "UNKNOWN";
  if (state & NODE_STATE_DRAIN) name += "+DRAIN";
  if (state & NODE_STATE_FAIL) name += "+FAIL";
  if (state & NODE_STATE_NO_RESPOND) name += "+NOT_RESPONDING";
  return name;
}

SlurmJob convert(const slurm_job_info_t& j) {
  SlurmJob o;
  o.id = j.job_id;
  o.name = text(j.name);
  o.state = job_state(j.job_state);
  o.completing = (j.job_state & (JOB_COMPLETING | JOB_REQUEUE)) != 0;
  o.requeued = (j.job_state & JOB_REQUEUE) != 0;
  o.exit_code = j.exit_code;
  o.derived_ec = j.derived_ec;
  o.restart_count = j.restart_cnt;
#ifdef EXPEDITED_REQUEUE  // since 25.11
  o.expedited_requeue = (j.bitflags & EXPEDITED_REQUEUE) != 0;
#endif
  o.nodes = text(j.nodes);
  o.exc_nodes = text(j.exc_nodes);
  o.admin_comment = text(j.admin_comment);
  o.comment = text(j.comment);
  o.std_out = text(j.std_out);
  o.work_dir = text(j.work_dir);
  o.batch_host = text(j.batch_host);
  o.req_nodes = text(j.req_nodes);
  o.array_job_id = j.array_job_id;
  o.array_task_id = j.array_task_id;
  o.partition = text(j.partition);
  o.reservation = text(j.resv_name);
  o.num_nodes = j.num_nodes;
  o.max_nodes = j.max_nodes == NO_VAL ? 0 : j.max_nodes;
  o.user_id = j.user_id;
  o.submit_time = j.submit_time;
  o.start_time = j.start_time;
  o.end_time = j.end_time;
  o.state_reason = j.state_reason;
  o.reason = reason_name(j.state_reason);
  return o;
}

SlurmNode convert(const node_info_t& n) {
  SlurmNode o;
  o.name = text(n.name);
  uint32_t base = n.node_state & NODE_STATE_BASE;
  o.down = base == NODE_STATE_DOWN || (n.node_state & (NODE_STATE_FAIL | NODE_STATE_NO_RESPOND)) != 0;
  o.state_down = base == NODE_STATE_DOWN || (n.node_state & NODE_STATE_FAIL) != 0;
  o.not_responding = (n.node_state & NODE_STATE_NO_RESPOND) != 0;
  o.drain = (n.node_state & NODE_STATE_DRAIN) != 0;
  o.busy = base == NODE_STATE_ALLOCATED || base == NODE_STATE_MIXED || (n.node_state & NODE_STATE_COMPLETING) != 0;
  if (reason_counts(o.drain, base == NODE_STATE_DOWN, (n.node_state & NODE_STATE_FAIL) != 0)) {
    o.reason = text(n.reason);
    o.reason_time = n.reason_time;
  }
  o.addr = text(n.node_addr);
  o.hostname = text(n.node_hostname);
  o.port = n.port;
  o.state = node_state_name(n.node_state);
  o.gres = text(n.gres);
  o.cpus = n.cpus;
  o.sockets = n.sockets > 0 ? n.sockets : 1;
  return o;
}

class LibslurmClient final : public SlurmClient {
 public:
  LibslurmClient() {
    static std::once_flag once;
    std::call_once(once, [] { slurm_init(nullptr); });
  }

  Result<std::vector<SlurmJob>> load_jobs() override {
    job_info_msg_t* msg = nullptr;
    if (Call c = called(slurm_load_jobs(jobs_update_, &msg, SHOW_ALL)); !c.ok()) {
      if (c.error == SLURM_NO_CHANGE_IN_DATA && jobs_update_ != 0) return jobs_;
      return Error{"cannot load jobs from slurmctld: " + c.text()};
    }
    std::vector<SlurmJob> jobs;
    jobs.reserve(msg->record_count);
    for (uint32_t i = 0; i < msg->record_count; ++i) jobs.push_back(convert(msg->job_array[i]));
    // slurmctld compares our time minus one second with its last change, so a change within the
    // second of this answer is not missed.
    jobs_update_ = msg->last_update;
    slurm_free_job_info_msg(msg);
    jobs_ = std::move(jobs);
    return jobs_;
  }

  Result<std::vector<SlurmNode>> load_nodes() override {
    node_info_msg_t* msg = nullptr;
    if (Call c = called(slurm_load_node(nodes_update_, &msg, SHOW_ALL)); !c.ok()) {
      if (c.error == SLURM_NO_CHANGE_IN_DATA && nodes_update_ != 0) return nodes_;
      return Error{"cannot load nodes from slurmctld: " + c.text()};
    }
    std::vector<SlurmNode> nodes;
    nodes.reserve(msg->record_count);
    for (uint32_t i = 0; i < msg->record_count; ++i)
      if (msg->node_array[i].name) nodes.push_back(convert(msg->node_array[i]));
    nodes_update_ = msg->last_update;
    slurm_free_node_info_msg(msg);
    nodes_ = std::move(nodes);
    return nodes_;
  }

  Result<std::vector<SlurmLicense>> load_licenses() override {
    license_info_msg_t* msg = nullptr;
    if (Call c = called(slurm_load_licenses(0, &msg, 0)); !c.ok()) {
      return Error{"cannot load licenses from slurmctld: " + c.text()};
    }
    std::vector<SlurmLicense> out;
    for (uint32_t i = 0; i < msg->num_lic; ++i)
      out.push_back({text(msg->lic_array[i].name), msg->lic_array[i].total, msg->lic_array[i].in_use});
    slurm_free_license_info_msg(msg);
    return out;
  }

  Result<std::vector<SlurmPartition>> load_partitions() override {
    partition_info_msg_t* msg = nullptr;
    if (Call c = called(slurm_load_partitions(0, &msg, SHOW_ALL)); !c.ok()) {
      return Error{"cannot load partitions from slurmctld: " + c.text()};
    }
    std::vector<SlurmPartition> out;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
      const partition_info_t& p = msg->partition_array[i];
      if (!p.name) continue;
      // OverSubscribe=EXCLUSIVE is max_share 0 (FORCE only adds a flag bit to the count).
      out.push_back({text(p.name), text(p.nodes), (p.flags & PART_FLAG_DEFAULT) != 0, (p.max_share & ~SHARED_FORCE) == 0});
    }
    slurm_free_partition_info_msg(msg);
    return out;
  }

  Result<std::vector<SlurmReservation>> load_reservations() override {
    reserve_info_msg_t* msg = nullptr;
    if (Call c = called(slurm_load_reservations(0, &msg)); !c.ok()) {
      return Error{"cannot load reservations from slurmctld: " + c.text()};
    }
    std::vector<SlurmReservation> out;
    time_t now = time(nullptr);
    for (uint32_t i = 0; i < msg->record_count; ++i) {
      const reserve_info_t& r = msg->reservation_array[i];
      if (r.name) out.push_back({text(r.name), text(r.node_list), text(r.users), r.start_time <= now && now < r.end_time});
    }
    slurm_free_reservation_info_msg(msg);
    return out;
  }

  Status put_reservation(const ReservationChange& change) override {
    resv_desc_msg_t d;
    slurm_init_resv_desc_msg(&d);
    std::string name = change.name, nodes = change.nodes, users = change.users;
    d.name = name.data();
    d.node_list = nodes.data();
    d.users = users.data();
    if (!change.create) return status_of(called(slurm_update_reservation(&d)));
    d.start_time = time(nullptr);
    d.duration = INFINITE;
    d.flags = RESERVE_FLAG_IGN_JOBS | RESERVE_FLAG_NO_HOLD_JOBS;
    char* created = slurm_create_reservation(&d);
    if (!created) return status_of(called(SLURM_ERROR));
    free_reservation_name(created);
    return ok_status();
  }

  Status requeue(std::uint32_t job_id) override {
    return status_of(called(slurm_requeue(whole_job(job_id), 0)));
  }

  Status update_job(const JobChange& c) override {
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    set_job_id(d, c.id);
    std::string exc = c.exc_nodes.value_or(""), req = c.req_nodes.value_or(""), comment = c.admin_comment.value_or("");
    std::string reservation = c.reservation.value_or("");
    if (c.exc_nodes) d.exc_nodes = exc.data();
    if (c.req_nodes) d.req_nodes = req.data();
    if (c.start_time) d.begin_time = *c.start_time;
    if (c.admin_comment) d.admin_comment = comment.data();
    if (c.reservation) d.reservation = reservation.data();
    if (c.hold) d.priority = *c.hold ? 0 : INFINITE;
    if (c.num_nodes) d.min_nodes = d.max_nodes = *c.num_nodes;
    return status_of(called(slurm_update_job(&d)));
  }

  Status signal_job(std::uint32_t job_id, int signo) override {
    return status_of(called(slurm_kill_job(whole_job(job_id), static_cast<uint16_t>(signo), KILL_FULL_JOB)));
  }

  Status drain_node(const std::string& node, const std::string& reason) override {
    return update_node(node, NODE_STATE_DRAIN, reason);
  }

  Status resume_node(const std::string& node) override { return update_node(node, NODE_RESUME, ""); }

  Status down_node(const std::string& node, const std::string& reason) override {
    // DOWN first: that ends the jobs on it at once. slurmctld takes one state per update; DRAIN
    // on a DOWN node adds the flag and keeps the state DOWN.
    if (Status downed = update_node(node, NODE_STATE_DOWN, reason); !downed) return downed;
    return update_node(node, NODE_STATE_DRAIN, reason);
  }

  Result<std::uint32_t> submit(const SlurmJobRequest& r) override {
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
    if (!r.elastic) {
      desc.num_tasks = r.nodes;
      desc.ntasks_per_node = 1;
    }
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
    if (Call c = called(slurm_submit_batch_job(&desc, &resp)); !c.ok()) {
      return Error{c.text(), c.error == ESLURM_ACCESS_DENIED};
    }
    std::uint32_t id = submitted_job_id(*resp);
    slurm_free_submit_response_response_msg(resp);
    return id;
  }

  Status cancel(std::uint32_t job_id) override {
    Call c = called(slurm_kill_job(whole_job(job_id), SIGKILL, 0));
    if (c.ok() || c.error == ESLURM_ALREADY_DONE) return ok_status();  // already finished: cancelling is done
    return Error{c.text()};
  }

  OutputPatternDialect output_pattern_dialect() const override {
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 11, 0)
    return OutputPatternDialect::stdio_fields;
#else
    return OutputPatternDialect::slurmd_fname;
#endif
  }

 private:
  Status update_node(const std::string& node, uint32_t state, const std::string& reason) {
    update_node_msg_t m;
    slurm_init_update_node_msg(&m);
    std::string names = node, why = reason;
    m.node_names = names.data();
    m.node_state = state;
    if (!why.empty()) {
      m.reason = why.data();
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(26, 5, 0)
      m.reason_uid = getuid();  // 26.05 takes the reason's user from the request's credential
#endif
    }
    return status_of(called(slurm_update_node(&m)));
  }

  time_t jobs_update_ = 0, nodes_update_ = 0;
  std::vector<SlurmJob> jobs_;
  std::vector<SlurmNode> nodes_;
};

}  // namespace

std::unique_ptr<SlurmClient> make_libslurm_client() { return std::make_unique<LibslurmClient>(); }

}  // namespace safe
