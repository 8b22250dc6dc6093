// Why a SaFE job stopped, and whether SaFE retries it. A pure, table-driven function of what the
// controller observed (docs/failure-classification.md): only infrastructure failures are retried,
// which is where SaFE differs from retrying every failure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"

namespace safe {

enum class FailureClass { node_fault, infra_transient, user_error, preempted, timeout, cancelled, unknown };

std::string_view to_string(FailureClass c);
std::optional<FailureClass> parse_failure_class(std::string_view name);
// All classes, in the order of the enum (for metrics with a zero for each).
const std::vector<FailureClass>& all_failure_classes();

// How the job's attempt ended, as the controller saw it.
enum class JobEnd {
  completed,
  failed,          // non-zero exit (FAILED)
  node_fail,       // NODE_FAIL
  boot_fail,       // BOOT_FAIL
  timeout,         // TIMEOUT
  deadline,        // DEADLINE
  preempted,       // PREEMPTED
  cancelled,       // CANCELLED (scancel, or an admin)
  out_of_memory,   // OUT_OF_MEMORY
  requeued_by_slurm,  // Slurm requeued it on its own (e.g. a node died under a --requeue job)
  refused_by_prolog,  // safe-prolog refused it before it started (its GPU gate) and Slurm requeued it
  running_on_bad_node,  // still running, but one of its nodes got a SaFE drain
  hung,            // still running, but made no progress for its hang timeout
};

std::string_view to_string(JobEnd e);

// A fault SaFE saw on one of the job's nodes during the job's run (between its start and end).
struct NodeFault {
  std::string node;
  std::string kind;    // "safe_drain" (health checker), "quarantine", "down" (Slurm), "epilog" (evidence),
                       // "prolog" (the prolog gate's refusal)
  std::string detail;  // the drain reason or the failing check, e.g. "SaFE: gpu0 uncorrectable ECC=2"
};

struct JobFailure {
  JobEnd end = JobEnd::failed;
  int exit_code = 0;  // exit status of the batch script (0..255), when it exited
  int signal = 0;     // signal that killed it, when it was killed
  std::vector<NodeFault> node_faults;
  std::string hang_detail;  // for JobEnd::hung: what stopped progressing
  // What the job itself says, from files its user writes (its output's tail, e.g. srun's "Unable
  // to create step"): shown with the classification, never a reason for one. A job must not
  // earn itself a retry the admin's config does not give it by printing the right words.
  std::string user_evidence;
};

struct Classification {
  FailureClass failure_class = FailureClass::unknown;
  std::string rule;      // the table row that matched, e.g. "node fault during the job"
  std::string evidence;  // what it rests on, e.g. "n3: SaFE: gpu2 uncorrectable ECC=2"
  std::vector<std::string> bad_nodes;  // nodes to keep the job away from
  // "node_fault n3 SaFE: gpu2 uncorrectable ECC=2": the one-line summary kept in AdminComment.
  std::string summary() const;
};

Classification classify_failure(const JobFailure& failure, const FailoverConfig& config);

bool is_retried(FailureClass c, const FailoverConfig& config);

// Exit code and signal from a wait status as Slurm reports it (job_info_t.exit_code).
struct ExitStatus {
  int code = 0;
  int signal = 0;
};
ExitStatus decode_wait_status(unsigned int status);

}  // namespace safe
