// A discrete-event simulation of one policy running a Trace on a simulated Slurm cluster:
// simulated seconds, no sleeping. The cluster schedules FIFO with backfill of smaller jobs and
// requeues as Slurm does (../shared/slurm-notes.md); a fault process from the trace breaks nodes
// and jobs. The SaFE policy decides with the controller's and health checker's own code:
// classify_failure and decide_after_failure, the failover phases (decide_waiting,
// decide_signalled, decide_requeued, place_restart), the storm guard (failover_backoff_s,
// FailoverRateLimiter), lemon detection (is_lemon), and the health checker's hysteresis and drain
// decisions (apply_run, decide_drain). Plain Slurm and Primus-SaFE are modelled from their
// documented behaviour (docs/benchmarks.md, "Goodput at scale", says what each does).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tests/goodput_sim/scenario.hpp"

namespace safe::sim {

enum class Policy { plain, primus, safe };
std::string to_string(Policy p);

struct RunSettings {
  Policy policy = Policy::safe;
  int ckpt_interval_min = 30;
  int spares = 0;
};

// Where the jobs' GPU time went, in GPU-seconds; the parts add up to `allocated`.
struct TimeAccount {
  double productive = 0;   // computation that counts: kept by a checkpoint, or done at the end
  double checkpoint = 0;   // saving checkpoints
  double startup = 0;      // launching, loading checkpoints (the first start's too)
  double queued = 0;       // pending for another job's nodes, before the first start
  std::map<std::string, double> lost_by_cause;  // after a fault: recomputed, hung, waiting, restarting
  double allocated = 0;    // every job's GPUs x (end or horizon - submission)
  double lost() const;
};

struct FaultCount {
  int interrupted = 0;     // struck a running job
  int idle_node = 0;       // struck a node no job was on (it is out of service until repaired)
  int out_of_service = 0;  // struck a node already out of service
  int job_not_running = 0; // a job-level fault of a job not running then
};

struct SimResult {
  RunSettings settings;
  // Meta's effective training time ratio: productive / the jobs' wall time from their first
  // start (queueing behind other jobs before it says nothing about failures; every wait after a
  // fault counts).
  double ettr = 0;
  double cluster_goodput = 0;   // productive / every GPU of the cluster (spares too) for the whole run
  double allocated_goodput = 0; // productive / the jobs' wall time from submission (queueing too)
  // The jobs that completed: the work they asked for, and what they kept (the same, or the
  // simulation lost or invented work).
  double completed_work_gpu_s = 0, completed_kept_gpu_s = 0;
  int restarts = 0;             // attempts after the first, all jobs
  int human_resubmits = 0;      // of those, by a person
  int quarantines = 0;          // lemon nodes SaFE quarantined
  std::vector<double> mttr_s;   // fault to the job running again, per interruption
  double waiting_for_nodes_s = 0;  // job-seconds eligible but without nodes after a fault
  int jobs = 0, jobs_completed = 0;
  TimeAccount time;
  FaultCount faults;
  std::map<std::string, int> classified;  // SaFE's classifications, by class
  int trace_faults = 0;
};

SimResult simulate(const Scenario& scenario, const Trace& trace, const RunSettings& settings);

}  // namespace safe::sim
