// What SaFE's daemons read from and do to Slurm, as plain structs and one small interface:
// libslurm in safed, safectl and the REST bridge (libslurm_client.cpp, the one libslurm reader),
// a fake in unit tests and benchmarks.
#pragma once

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/batch_output_path.hpp"

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
  int restart_cnt = 0;
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
  std::uint32_t num_nodes = 0;
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
  bool idle = false;
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

struct SlurmPartition {
  std::string name;
  std::string nodes;        // host list
  bool is_default = false;
  bool whole_node = false;  // OverSubscribe=EXCLUSIVE
};

struct SlurmLicense {
  std::string name;
  std::uint32_t total = 0, in_use = 0;
};

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
  // Full lists; nullopt (with `error`) when Slurm could not be read: callers then act on nothing.
  virtual std::optional<std::vector<SlurmJob>> load_jobs(std::string& error) = 0;
  virtual std::optional<std::vector<SlurmNode>> load_nodes(std::string& error) = 0;
  virtual std::optional<std::vector<SlurmLicense>> load_licenses(std::string& error) = 0;
  virtual std::optional<std::vector<SlurmPartition>> load_partitions(std::string& error) = 0;
  // Each returns "" on success, else Slurm's error text.
  virtual std::string requeue(std::uint32_t job_id) = 0;
  virtual std::string update_job(const JobChange& change) = 0;
  // Sends `signo` to the batch shell and every step.
  virtual std::string signal_job(std::uint32_t job_id, int signo) = 0;
  virtual std::string drain_node(const std::string& node, const std::string& reason) = 0;
  virtual std::string resume_node(const std::string& node) = 0;
  // Sets the node DOWN: Slurm ends (or requeues) the jobs on it at once.
  virtual std::string down_node(const std::string& node, const std::string& reason) = 0;
  // How this Slurm's slurmstepd names output files (its release decides).
  virtual OutputPatternDialect output_pattern_dialect() const = 0;
};

}  // namespace safe
