// The controller's core: one reconcile pass looks at every job and node Slurm reports, records
// node faults, classifies the attempts of SaFE jobs that ended, and drives each failover through
// its phases (checkpoint signal, grace, requeue, exclusions and start time), quarantines lemon
// nodes, and detects hangs. All side effects go through SlurmActions, JobFiles and StateStore, and
// each failover is keyed by (job, Slurm restart count), so a pass repeated after a crash or a
// restart never requeues twice.
//
// Where each part is: the pass and a job's record here (failover_planner.cpp); the nodes' faults
// and quarantines in failover_nodes.cpp; an attempt's end, its classification and the start of
// its failover in failover_attempts.cpp; the failover's phases in failover_executor.cpp, which
// acts on the pure decisions of failover_decisions.hpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/batch_output_path.hpp"
#include "common/config.hpp"
#include "common/daemon_log.hpp"
#include "common/failure_classification.hpp"
#include "common/job_metadata.hpp"
#include "common/requeue_storm_guard.hpp"
#include "controller/safed/failover_decisions.hpp"
#include "controller/safed/job_files.hpp"
#include "controller/safed/slurmd_liveness.hpp"
#include "controller/safed/elastic_size.hpp"
#include "controller/safed/spare_pool.hpp"
#include "common/slurm/client.hpp"
#include "controller/safed/state_store.hpp"

namespace safe {


// What the planner keeps about one SaFE job between passes.
struct TrackedJob {
  JobRecord record;  // its key (id, submit time) tells this job from an older one with its id
  int running_attempt = -1;  // restart count of the run last seen running
  std::string attempt_nodes;
  long long attempt_start = 0;
  // When its first run started (its earliest attempt in the store after a restart of safed): ETTR's
  // wall time runs from here, so waiting in the queue before the job ever ran is not lost time.
  long long first_start = 0;
  int classified_attempt = -1;  // restart count of the last attempt classified
  bool seen = false;
  long long seen_pass = 0;
  std::string admin_comment;  // as last parsed into `meta`
  JobMetadata meta;
  // As Slurm last showed them while it ran (the hot spares serve jobs by partition, of a fixed
  // node count, that named no nodes).
  std::string partition;
  bool node_range = false;
  bool required_nodes = false;
  std::string nodes_text;     // as last expanded into `node_names`
  std::vector<std::string> node_names;
  long long expected_start = 0;  // StartTime safed set after a requeue, until the job runs
  // The update safed made after its last requeue of the job (exclusions, start, AdminComment) and
  // the restart count of the run it requeued, kept until the next run starts (keep_restart).
  std::optional<JobChange> restart_change;
  int requeued_attempt = -1;
  int reopened_attempt = -1;  // a failover open again after slurmctld lost its requeue: counted once
  int prolog_checked = -1;  // restart count of the run whose prolog evidence a pending pass read
  // When safed first saw the running job on a faulty node: the prolog writes its refusal before
  // it drains, so a read from then on tells whether this run is one the prolog is refusing.
  long long bad_node_seen = 0;
  // The attempt whose end safed saw, and when: its evidence must be read after that.
  int ended_run = -1;
  long long ended_seen = 0;
  // hang detection
  long long output_size = -1, heartbeat_mtime = 0, last_progress = 0;
  bool no_progress_signal = false;  // neither output nor heartbeat can be read: never "hung"
  long long signal_sent_ns = 0;     // when safed sent the checkpoint signal (0: not in this run of safed)
  int fenced_attempt = -1;          // restart count of the last run whose checkpoints safed fenced
};

struct PlannerCounters {
  std::map<std::string, long long> failures_by_class;   // classified attempts
  std::map<std::string, long long> failovers_by_class;  // requeues made
  std::vector<double> mttr_samples;                     // fault -> running again, seconds
  std::map<std::string, double> time_lost_by_workspace; // same, summed per workspace
  long long deferred_rate_limit = 0, deferred_backoff = 0, refused_exhausted = 0;
  long long quarantines = 0;
  std::map<std::string, long long> spare_placements;     // by partition: failing-over jobs started on spares
  std::map<std::string, double> spare_idle_gpu_seconds;  // by partition: GPU time free spares sat idle
  long long elastic_shrinks = 0;  // elastic jobs' restarts asked for fewer nodes than they were submitted for
};

// A failing-over job safed started on spares: the nodes held for it in the pool's reservation
// until it runs (then they leave the reservation and the job is taken out of it).
struct SpareClaim {
  std::string partition;
  std::vector<std::string> nodes;
  std::string user;
  long long since = 0;
  int run = 0;  // Slurm's restart count of the failed run: the claim ends once a later run runs
};

class FailoverPlanner {
 public:
  // `dialect`: how this Slurm names output files (SlurmReader::output_pattern_dialect).
  FailoverPlanner(SafeConfig config, SlurmActions& slurm, StateStore& store, JobFiles& files,
                  OutputPatternDialect dialect);

  // A user's name by uid, for the %u of output paths (default: the uid as a number).
  void set_user_names(std::function<std::string(std::uint32_t)> names) { user_names_ = std::move(names); }
  // The wall clock in nanoseconds, for the checkpoint signal's time (default: the real one).
  void set_wall_clock_ns(std::function<long long()> clock) { wall_ns_ = std::move(clock); }

  void set_config(SafeConfig config);
  const SafeConfig& config() const { return config_; }

  // One pass over a consistent view of the cluster. Never acts on partial data: the caller
  // passes only complete lists.
  void reconcile(const std::vector<SlurmJob>& jobs, const std::vector<SlurmNode>& nodes, long long now);

  // The nodes whose slurmd did not answer safed's latest probe (DeadNodeDetector): a failover
  // treats them like nodes Slurm flags as not responding.
  void set_unanswered_nodes(std::unordered_set<std::string> nodes) { unanswered_ = std::move(nodes); }

  // Slurm's partitions and reservations, for the hot spares (failover.spares) and elastic jobs'
  // sizes: read by the caller before each pass when needs_partitions(); a pass whose reads failed
  // keeps the pools as they are, gives no spare and resizes no job.
  void set_spare_inputs(std::vector<SlurmPartition> partitions, std::vector<SlurmReservation> reservations) {
    partitions_ = std::move(partitions);
    reservations_ = std::move(reservations);
    spare_inputs_ok_ = true;
  }
  void spare_inputs_failed() { spare_inputs_ok_ = false; }
  bool needs_partitions() const;
  // Each pool's plan after the last pass, by partition (status, metrics).
  const std::map<std::string, SparePoolPlan>& spare_pools() const { return spare_plans_; }
  const std::map<std::uint32_t, SpareClaim>& spare_claims() const { return spare_claims_; }

  // Nodes Slurm set DOWN as not responding, whose fault's count toward a quarantine waits for
  // safed's own probe: a slurmd that answers safed while slurmctld cannot talk to it is no machine
  // fault (munged stopped on the node, a munge key or clock that differs). The fault is recorded at
  // once all the same: a job that ran there failed over it. The probe loop probes these
  // (DeadNodeDetector::targets) and hands its results to note_probe_results with the pass() it
  // chose its targets at; the next reconcile pass acts on them.
  std::unordered_set<std::string> nodes_awaiting_probe() const;
  void note_probe_results(const std::vector<ProbeResult>& results, long long targets_pass);
  long long pass() const { return pass_; }

  // The system clock stepped by `delta` seconds (ClockStepWatch): moves the starting points of the
  // running timers with it (an open failover's times, a job's hang clock, the rate limit's
  // window), so that each lasts as long as it would have. What is over keeps its times.
  void shift_clock(long long delta);

  // safed is about to set `node` DOWN (its slurmd is dead), which makes Slurm requeue the jobs on
  // it at once: the other nodes of the SaFE jobs running there that a spare pool serves are held
  // in its reservation first (as a failover does before its requeue), so that no queued job
  // takes them meanwhile. Between passes (the probe thread): one transaction of its own.
  void hold_before_node_loss(const std::string& node, long long now);

  // Ends a quarantine (safectl node release): resumes the node and records it.
  Status release_node(const std::string& node, long long now);

  const std::unordered_map<std::uint32_t, TrackedJob>& jobs() const { return jobs_; }
  const std::vector<SlurmNode>& nodes() const { return nodes_; }
  const SlurmNode* node(const std::string& name) const {
    auto it = node_index_.find(name);
    return it == node_index_.end() ? nullptr : it->second;
  }
  const PlannerCounters& counters() const { return counters_; }
  const std::map<std::string, QuarantineRecord>& quarantined() const { return quarantined_; }
  int rate_limit_used(long long now) { return limiter_.used(now); }
  // Lines for the log since the last call.
  std::vector<LogEntry> take_log();
  // The file a run of the job writes its output to, as slurmstepd names it ("" when none).
  std::string output_path(const SlurmJob& job) const;

 private:
  void observe_nodes(const std::vector<SlurmNode>& nodes, long long now);
  void record_fault(const SlurmNode& n, NodeCondition c, long long now);
  // Counts a recorded fault toward a quarantine (is_lemon), and quarantines the node when it is one.
  void count_fault(const std::string& node, const NodeFaultRecord& rec, long long now);
  // A node Slurm lost, whose fault's count waits for the probe (nodes_awaiting_probe).
  bool fault_awaits_probe(const SlurmNode& n, NodeCondition c) const;
  struct LostBySlurm {
    long long seen_pass = 0;             // the pass that found the node DOWN
    std::optional<ProbeResult> verdict;  // from a probe round chosen after that pass
    NodeFaultRecord fault;               // as recorded
  };
  // Acts on the probe's verdict on a node Slurm lost: its fault counted, or marked not counted.
  void settle_lost_node(const SlurmNode& n, const LostBySlurm& lost, long long now);
  void observe_job(const SlurmJob& job, const JobMetadata& meta, long long now);
  void adopt(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta);
  void note_run(TrackedJob& t, const SlurmJob& job, long long now);
  // The failover `f` ended with the job running again: its MTTR sample.
  void note_running_again(FailoverRecord& f, const SlurmJob& job, long long now);
  void keep_restart(TrackedJob& t, const SlurmJob& job, long long now);
  void reopen_failover(TrackedJob& t, const SlurmJob& job);
  bool advance_open_failovers(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  // What the job's state shows about its attempts (failover_attempts.cpp).
  void observe_attempt(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  void observe_running(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  void observe_previous_end(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  void observe_end(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  // The job left Slurm (or its id now names another job): records its end, drops its evidence.
  void finish_gone(TrackedJob& t, long long now);
  // Faults SaFE saw on `nodes` since `from`, with the epilog's evidence; nullopt while that is
  // still being read.
  std::optional<std::vector<NodeFault>> faults_during(TrackedJob& t, const SlurmJob& job, const std::string& nodes,
                                                      long long from, long long now);
  // Everything classifying the job's ended run reads from files; false while a read is pending.
  bool reads_for_ended_run(TrackedJob& t, const SlurmJob& job, long long now, JobFailure& failure, long long& checkpoint);
  // The prolog's refusal of the run before the job's current (pending) one, read once per run.
  Observed<std::optional<NodeFault>> refusal_of_previous_run(TrackedJob& t, const SlurmJob& job);
  void start_failover(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, const JobFailure& failure,
                      long long now);
  void finish_without_failover(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                               const Classification& c, const std::string& note, long long now);
  // Moves an open failover on through its phases (failover_executor.cpp).
  void advance(FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  void restart(FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, const FailoverStep& s,
               long long now);
  // Hot spares (failover_spares.cpp). A restart that the cluster outside the reservations cannot
  // hold now, of a job a pool serves, waits for the end of the pass (true): then the pools' free
  // spares go to the waiting jobs by grant_spares' rule, and the rest restart as before.
  bool wait_for_spares(const FailoverRecord& f, const TrackedJob& t, const SlurmJob& job, const FailoverStep& s,
                       long long now);
  // Claims the healthy nodes of a failing-over job a pool serves, in the pool's reservation,
  // before the requeue frees them (once per failover).
  void hold_survivors(const FailoverRecord& f, const TrackedJob& t, const SlurmJob& job, long long now);
  // The claim itself: `run` is the failed run's restart count, `off` the nodes not to hold;
  // `running`: the job still runs there (its nodes are busy with it).
  void hold_nodes(const TrackedJob& t, int run, const std::string& nodes, const std::set<std::string>& off,
                  bool running, long long now);
  void serve_spare_requests(const std::vector<SlurmJob>& jobs, long long now);
  // Moves the pools toward their plans: claims of jobs that started (or gave up) end, the
  // reservations get their nodes and users.
  void maintain_spare_pools(const std::vector<SlurmJob>& jobs, long long now);
  // The pool that serves the job's failovers, if any.
  const SparePoolConfig* spare_pool_of(const TrackedJob& t) const;
  SparePoolView spare_pool_view(const SparePoolConfig& pool) const;
  Status put_spare_reservation(const SparePoolConfig& pool, const SparePoolPlan& plan, long long now);
  // Shrink and grow back (failover_elastic.cpp). What an elastic job could have now: the nodes of
  // its partitions, the kinds it ran on, and how many of them are free (out of `exclude`; its own
  // nodes held for it count; `with_spares`: its pool's free spares too; less those promised to
  // other jobs' grow backs in this pass); nullopt when safed cannot tell.
  struct ElasticRoom {
    std::set<std::string> partition_nodes;
    std::set<NodeKind> kinds;
    long long free = 0;
  };
  std::optional<ElasticRoom> elastic_room(const TrackedJob& t, const SlurmJob& job, const std::string& exclude,
                                          bool with_spares) const;
  // The node count an elastic job's restart asks for (`exclude`: its ExcNodeList after the
  // restart); nullopt for other jobs, or when safed cannot tell.
  std::optional<std::uint32_t> elastic_restart_size(const FailoverRecord& f, const TrackedJob& t, const SlurmJob& job,
                                                    const std::string& exclude, long long now) const;
  // Elastic jobs safed restarted, waiting in the queue: their node count follows the free nodes.
  void resize_waiting_jobs(const std::vector<SlurmJob>& jobs, long long now);
  // A running elastic job short of nodes: a planned restart at full size once they are free.
  void check_grow_back(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  std::optional<long long> grow_back_room(const TrackedJob& t, const SlurmJob& job);
  // A grow back not requeued yet whose free nodes are gone: ended (true), the job runs on.
  bool grow_back_called_off(FailoverRecord& f, TrackedJob& t, const SlurmJob& job);
  // The job was cancelled, or ended after the requeue: the failover stops there.
  void end_failover(FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  std::vector<RunNode> run_nodes(const TrackedJob& t, const SlurmJob& job) const;
  RestartPlacement placement_for(const FailoverRecord& f, const TrackedJob& t, const SlurmJob& job);
  // Logs (and counts) a failover's deferral when it is not the one logged last for the job.
  void defer(std::uint32_t job_id, Deferral why, const std::string& message);
  // The end of the job's output after a failover: what it says is the user's, never a diagnosis.
  std::optional<std::string> output_tail_after_failover(TrackedJob& t, const SlurmJob& job);
  // Adds an attempt's run time to its job, and for a failed attempt the work after its newest
  // complete checkpoint to the job's lost work (see lost_work.hpp).
  void count_attempt(TrackedJob& t, long long start, long long end, bool failed, long long checkpoint);
  // The newest complete checkpoint as last read from `since` on (0: none or not known); a new read
  // is asked for when the newest started before `want_since`.
  long long known_checkpoint_ns(const TrackedJob& t, const JobMetadata& meta, long long since, long long want_since);
  // Fences the checkpoints of the run `f` supersedes before Slurm may start another
  // (common/checkpoint_fence.hpp): true once that is done or has failed (logged), false while the
  // write is under way.
  bool fence_superseded_run(const FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                            long long now);
  // Ends the attempt `f` failed over while it ran (still open) at `end`, and counts it.
  void settle_running_attempt(const FailoverRecord& f, TrackedJob& t, const JobMetadata& meta, long long end);
  void check_hang(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now);
  void log_action(long long now, const JobKey& job, const std::string& node, const std::string& action,
                  const std::string& detail, bool ok);
  std::string tenant_of(const TrackedJob& t) const;
  void checkpoint_store();  // commits what is decided so far, before an action with side effects
  // Notice: what safed did or found; warning: what it could not do, or a record it lost.
  void log(std::string line, LogPriority priority = LogPriority::notice);

  SafeConfig config_;
  SlurmActions& slurm_;
  OutputPatternDialect dialect_;
  StateStore& store_;
  JobFiles& files_;
  FailoverRateLimiter limiter_;
  std::unordered_map<std::uint32_t, TrackedJob> jobs_;
  std::map<std::pair<JobKey, int>, FailoverRecord> open_;  // by (job, attempt)
  std::unordered_map<std::string, std::vector<NodeFaultRecord>> faults_;  // recent, by node
  std::unordered_map<std::string, bool> in_fault_;  // node -> its fault episode is recorded
  std::map<std::string, QuarantineRecord> quarantined_;
  std::unordered_map<std::string, const SlurmNode*> node_index_;
  std::vector<SlurmNode> nodes_;
  std::unordered_set<std::string> unanswered_;
  std::unordered_map<std::string, LostBySlurm> lost_by_slurm_;
  std::size_t bad_node_count_ = 0;  // safe_drain + quarantined nodes in this pass
  long long pass_ = 0;
  PlannerCounters counters_;
  std::vector<LogEntry> log_;
  std::map<std::uint32_t, Deferral> last_deferral_;  // job -> last deferral logged
  // Hot spares.
  std::vector<SlurmPartition> partitions_;
  std::vector<SlurmReservation> reservations_;
  bool spare_inputs_ok_ = false;
  struct WaitingForSpares {
    std::string partition;
    SpareRequest request;
    FailoverStep step;
  };
  std::vector<WaitingForSpares> spare_requests_;  // this pass's
  std::map<std::uint32_t, SpareClaim> spare_claims_;
  std::map<std::string, SparePoolPlan> spare_plans_;
  std::map<std::string, std::string> spare_errors_;  // by partition: the last error logged
  // Elastic jobs: the node count safed last asked for, by job (Slurm's report of a pending job's
  // count can be an estimate); the nodes promised to grow backs in this pass (partition, count).
  std::map<std::uint32_t, std::uint32_t> asked_nodes_;
  std::map<std::uint32_t, std::pair<std::string, long long>> grow_promises_;
  long long spare_pass_time_ = 0;
  std::function<std::string(std::uint32_t)> user_names_ = [](std::uint32_t uid) { return std::to_string(uid); };
  std::function<long long()> wall_ns_ = [] {
    return static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::system_clock::now().time_since_epoch())
                                      .count());
  };
};

}  // namespace safe
