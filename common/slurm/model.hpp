// SaFE's one model of what Slurm reports: jobs, nodes, partitions and licenses as plain structs
// with typed states. safed, safectl and the REST bridge read them through one libslurm reader
// (controller/safed/libslurm_client.cpp) and every test fakes Slurm with them; names of states
// appear as strings only where they are shown (JSON, CLI).
#pragma once

#include <sys/wait.h>

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

namespace safe {

// Slurm's base job states (slurm.h enum job_states), without the flag bits.
enum class SlurmJobState : std::uint8_t {
  pending = 0, running, suspended, complete, cancelled, failed, timeout, node_fail, preempted, boot_fail,
  deadline, out_of_memory, other
};

// The state as scontrol names it: PENDING, RUNNING, COMPLETED, NODE_FAIL, ...
constexpr std::string_view slurm_name(SlurmJobState s) {
  switch (s) {
    case SlurmJobState::pending: return "PENDING";
    case SlurmJobState::running: return "RUNNING";
    case SlurmJobState::suspended: return "SUSPENDED";
    case SlurmJobState::complete: return "COMPLETED";
    case SlurmJobState::cancelled: return "CANCELLED";
    case SlurmJobState::failed: return "FAILED";
    case SlurmJobState::timeout: return "TIMEOUT";
    case SlurmJobState::node_fail: return "NODE_FAIL";
    case SlurmJobState::preempted: return "PREEMPTED";
    case SlurmJobState::boot_fail: return "BOOT_FAIL";
    case SlurmJobState::deadline: return "DEADLINE";
    case SlurmJobState::out_of_memory: return "OUT_OF_MEMORY";
    case SlurmJobState::other: break;
  }
  return "UNKNOWN";
}

struct SlurmJob {
  std::uint32_t id = 0;
  std::string name;
  SlurmJobState state = SlurmJobState::pending;
  bool completing = false;  // JOB_COMPLETING or JOB_REQUEUE flag: still winding down
  bool requeued = false;    // JOB_REQUEUE flag: requeued, the old run still winding down
  std::uint32_t exit_code = 0;   // wait status of the batch script
  std::uint32_t derived_ec = 0;  // highest wait status of the steps
  int restart_count = 0;  // Slurm's restart_count: how often the job was requeued
  bool expedited_requeue = false;  // --requeue=expedite (25.11 and later): Slurm restarts it itself
  std::string nodes;      // host list of the (last) allocation
  std::string exc_nodes;
  std::string admin_comment;
  std::string comment;    // the user's (the REST bridge keeps its workload record here)
  std::string std_out;    // output file path as given (may hold %j, %x, %u patterns)
  std::string work_dir;
  std::string batch_host; // node running the batch script
  std::string req_nodes;  // nodes the job requires (-w/--nodelist), a host list
  std::uint32_t array_job_id = 0;           // 0: not part of an array
  std::uint32_t array_task_id = 0xfffffffe; // NO_VAL: not part of an array
  std::string partition;
  std::string reservation;  // the reservation(s) it asked for or was put in, "" for none
  std::uint32_t num_nodes = 0;
  std::uint32_t max_nodes = 0;  // of its request (-N MIN-MAX); 0: not set, or no more than num_nodes
  std::uint32_t user_id = 0;
  std::time_t submit_time = 0, start_time = 0, end_time = 0;
  std::uint16_t state_reason = 0;
  std::string reason;  // state_reason as scontrol names it (Resources, JobHeldAdmin, ...), "" for none
};

// Node state bits as safed uses them.
struct SlurmNode {
  std::string name;
  bool down = false;         // DOWN base state, or FAIL / NOT_RESPONDING
  bool state_down = false;   // DOWN base state or FAIL: Slurm has taken the node out of service
  bool not_responding = false;
  bool drain = false;        // DRAIN flag
  bool busy = false;         // ALLOCATED or MIXED, or completing a job: another job holds it
  bool reserved = false;     // in an active reservation (set by safed's planner from the reservations)
  // Only on a node that is DRAIN, DOWN or FAIL (reason_counts); empty on any other.
  std::string reason;
  std::time_t reason_time = 0;
  std::string addr;  // slurmd's address and port (NodeAddr, Port)
  std::string hostname;  // NodeHostname
  int port = 0;
  std::string state;  // as scontrol shows it: IDLE, MIXED+DRAIN, DOWN+NOT_RESPONDING, ...
  std::string gres;
  int cpus = 0;
  int sockets = 1;
};

// Whether a node's Reason says anything. Slurm from 23.02.5 through 25.11, run without accounting
// (AccountingStorageType=accounting_storage/none), keeps a resumed node's old Reason; fixed in
// 26.05. Such a stale reason on an IDLE node is nobody's drain: both readers of the seam (libslurm
// and scontrol's NodeStatus) drop a reason that does not count.
constexpr bool reason_counts(bool drain, bool down, bool fail) { return drain || down || fail; }

struct SlurmPartition {
  std::string name;
  std::string nodes;        // host list
  bool is_default = false;
  bool whole_node = false;  // OverSubscribe=EXCLUSIVE
};

struct SlurmReservation {
  std::string name;
  std::string nodes;  // host list
  std::string users;  // comma-separated, as Slurm shows them
  bool active = true; // it has started and not ended: jobs outside it cannot run on its nodes
};

struct SlurmLicense {
  std::string name;
  std::uint32_t total = 0, in_use = 0;
};

// The job will not change any more: it ended, and is not being requeued.
constexpr bool has_ended(const SlurmJob& job) {
  if (job.requeued) return false;
  switch (job.state) {
    case SlurmJobState::pending:
    case SlurmJobState::running:
    case SlurmJobState::suspended:
    case SlurmJobState::other: return false;
    default: return true;
  }
}

// Pending, and not a requeued run still winding down (that one's StartTime is the old run's).
constexpr bool waiting_to_start(const SlurmJob& job) { return !job.requeued && job.state == SlurmJobState::pending; }

// The job's state as SaFE shows it: Slurm's name, or REQUEUED while a requeued run winds down.
constexpr std::string_view shown_state(const SlurmJob& job) {
  return job.requeued ? "REQUEUED" : slurm_name(job.state);
}

// A wait status as a shell reports it: the exit code, or 128+N for a death by signal N.
inline int shell_exit_status(std::uint32_t wait_status) {
  int status = static_cast<int>(wait_status);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 0;
}

}  // namespace safe
