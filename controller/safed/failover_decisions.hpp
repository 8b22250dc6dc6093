// The failover planner's decisions, as pure functions of what safed sees in this pass and what it
// keeps about the job: which of a job's attempts has something to classify, and what a failover
// does next, decided phase by phase and returned as a typed step. The planner's
// executor (failover_executor.cpp) gathers each phase's inputs, performs the step's actions
// against Slurm and moves the failover to its next phase only when they succeeded; a failover
// taken up again after a restart of safed is decided afresh from its stored phase.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/slurm/model.hpp"
#include "controller/safed/state_store.hpp"

namespace safe {

// The class of an elastic job's planned restart back to its full size (failover_elastic.cpp).
inline constexpr std::string_view kGrowBackClass = "grow_back";

// Why a failover does nothing in a pass; each kind is logged once per stretch of waiting.
enum class Deferral { none, backoff, rate_limit, silent_nodes };

// A node of the job's allocation that does not answer, found before the requeue.
struct SilentNode {
  std::string name;
  std::string reason;      // what the job's record says about it
  bool set_down = false;   // safed sets it DOWN first (only safed's probes found it silent)
};

// Where the requeued job may run next.
struct RestartPlacement {
  std::string exclude;                      // ExcNodeList
  std::optional<std::string> required;      // ReqNodeList, when a required node must be dropped
  std::vector<std::string> dropped_required;
  bool reuses_left = false;                 // the job may run on nodes it just left (kRevokeMargin_s)
  // The job's bad nodes left out of `exclude`: the rest of the cluster cannot hold the job.
  std::vector<std::string> bad_not_excluded;
  // Set: the job's reservation after the restart ("": out of a spare reservation it was in; a
  // spare reservation's name: onto the spares safed claimed for it).
  std::optional<std::string> reservation;
  std::uint32_t spare_nodes = 0;  // onto the spares: how many nodes it was given there (held and spares)
  bool operator==(const RestartPlacement&) const = default;
};

struct RestartInputs {
  std::string user_exclude;    // the job's own ExcNodeList (host list)
  std::set<std::string> bad;   // bad nodes of this and every earlier failover of the job
  std::string required;        // the job's ReqNodeList (host list)
  std::string left;            // the nodes the failed run just left (host list)
  std::uint32_t num_nodes = 1;
};

// A requeued job may start again on a node it just left once the second in which slurmctld
// revoked the old run's credential there has passed: slurmd refuses a credential stamped no later
// than the revocation (src/slurmd/slurmd/cred_context.c), and slurmctld's own rule for a requeued
// job is "begin = old run wound down + requeue_delay + 1 s" (job_mgr.c, batch_requeue_fini).
// requeue_delay defaults to the credential's lifetime (120 s) out of caution; safed, which also
// waits for the old run to wind down, needs only the second. slurmctld stamps the revocation while
// it takes the requeue, within the pass that sent it: two seconds from that pass's time cover it.
inline constexpr long long kRevokeMargin_s = 2;

// Keeps the job off its bad nodes when the rest of `nodes` can hold it (else Slurm's drains keep
// it off those still out of service) and off those it excluded itself; drops a failed node it
// requires (-w) from its required list; keeps it off the nodes it just left when free nodes
// elsewhere (not busy with other jobs) can hold it now, else lets it back on them after
// kRevokeMargin_s.
RestartPlacement place_restart(const RestartInputs& in, const std::vector<SlurmNode>& nodes);

struct FailoverStep {
  enum class Kind {
    wait,               // nothing this pass: `deferral` says why (none: waiting on Slurm or the grace)
    begin,              // backoff over: take a slot of the rate limit, then send `signal` (0: none)
    stop_waiting,       // signalled: the grace ends (`why`); requeue next
    requeued_by_slurm,  // Slurm already requeued this run (perhaps before a restart of safed)
    requeue,            // take `silent` nodes off first; requeue unless `hold` (the job still holds one)
    restart,            // set the job's exclusions, required nodes and `start` time: done
    requeue_lost,       // requeued, yet the run goes on uncounted: slurmctld lost the requeue; again
    ended,              // the job was cancelled, or ended after the requeue: nothing more to do
  };
  Kind kind = Kind::wait;
  Deferral deferral = Deferral::none;
  int signal = 0;
  std::string why;
  std::vector<SilentNode> silent;
  bool hold = false;
  RestartPlacement placement;
  long long start = 0;
  // restart: Slurm already started the job again on its own (SchedulerParameters=requeue_delay
  // shorter than safed's pass, 25.11): only the record is written; a running job's nodes and
  // start time cannot change.
  bool running_again = false;
};

// What safed logs when Slurm shows a run it requeued going on or ended, uncounted.
std::string lost_requeue_text(const SlurmJob& job);

// waiting: the backoff after earlier failovers, then the checkpoint signal to a running job.
FailoverStep decide_waiting(const FailoverRecord& f, const SlurmJob& job, int checkpoint_signal, long long now);
// signalled: until the job stopped, finished a checkpoint after the signal, or the grace is over.
FailoverStep decide_signalled(const FailoverRecord& f, const SlurmJob& job, int grace_s, bool checkpointed,
                              long long now);
// One node of the failed run as this pass sees it.
struct RunNode {
  std::string name;
  bool down = false;        // Slurm: DOWN, FAIL or not responding
  bool state_down = false;  // Slurm: DOWN or FAIL (taken out of service)
  bool unanswered = false;  // safed's probes: silent
  std::string reason;
};
// requeueing: requeue, once the job holds none of `run_nodes` that do not answer.
FailoverStep decide_requeueing(const FailoverRecord& f, const SlurmJob& job, const std::vector<RunNode>& run_nodes);
// requeued: once Slurm shows the requeue and the old run is gone, restart it at `placement`. A
// placement on nodes the job just left waits until kRevokeMargin_s after the requeue.
FailoverStep decide_requeued(const FailoverRecord& f, const SlurmJob& job, const RestartPlacement& placement,
                             long long now);

// Adds `node` to the failover's bad nodes as a node fault (false when it was there already).
bool blame_node(FailoverRecord& f, const std::string& node, const std::string& reason);

// A node as the planner sees it: in service, drained by SaFE's health checks, quarantined as a
// lemon, down (or not responding), or drained by an administrator.
enum class NodeCondition { ok, safe_drain, quarantined, down, admin_drain };
std::string_view to_string(NodeCondition c);
NodeCondition node_condition(const SlurmNode& n);

// What a pass does about one node.
struct NodeStep {
  bool restore_quarantine = false;  // SaFE's quarantine reason was replaced on a node out of service: set it again
  bool end_quarantine = false;      // a quarantined node was resumed outside SaFE: the quarantine is over
  bool record_fault = false;        // a fault episode begins: recorded (and the node perhaps found a lemon)
  bool in_fault = false;            // the node's episode after this pass
};
// `quarantined`: SaFE holds the node in quarantine; `in_fault`: its fault episode is recorded. One
// fault per episode: a node that goes from not responding to DOWN, or whose SaFE reason is
// reworded, has still failed once.
NodeStep decide_node(const SlurmNode& n, bool quarantined, bool in_fault);

// What follows a classified failure of an attempt.
enum class AfterFailure {
  leave_to_owner,     // requeued by Slurm or an administrator for a reason SaFE has no fault for, or by
                      // Slurm's expedited requeue (the job's owner asked Slurm to restart it): theirs
  not_retried,        // its class is not in failover.retry_classes: recorded (and held if Slurm requeued it)
  retries_exhausted,  // the job used its retries: recorded (and held)
  fail_over,
};
// `by_slurm`: the run was requeued before SaFE acted (by Slurm, or refused by the prolog);
// `refused`: the prolog refused the run (it never started, so it costs no retry); `expedited`: the
// job has Slurm's --requeue=expedite.
AfterFailure decide_after_failure(bool by_slurm, bool refused, bool expedited, bool retried, int retries_used,
                                  int max_retries);

// Slurm's base state says the job ran to an end (not pending, running or suspended).
bool ended(SlurmJobState s);

// What a job's state shows about its attempts that safed has not classified yet.
enum class AttemptEvent {
  none,
  running,        // its current run is unclassified: check its nodes and for a hang
  previous_ended, // pending again after a requeue safed did not make: the prolog refused it, or Slurm requeued it
  ended,          // it ended (completed, failed, cancelled, ...) and has wound down
};
// `classified` is the restart count of the job's last classified attempt (-1: none).
AttemptEvent attempt_event(const SlurmJob& job, int classified);

}  // namespace safe
