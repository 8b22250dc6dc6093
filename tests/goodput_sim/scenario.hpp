// What happens to the simulated cluster, independent of who runs it: its nodes, the jobs submitted
// to it, the causes of failure with their share, visibility and repair time, and the costs of
// checkpoints, restarts and people. A Trace draws every fault and job from a seed once, so that
// every policy meets exactly the same events (docs/benchmarks.md, "Goodput at scale").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace safe::sim {

// Who can see a fault.
enum class Visibility {
  health,      // a health check with GPUs and network ports sees it (SaFE's; Primus-SaFE's node agent)
  node_down,   // the host stops: Slurm after SlurmdTimeout, SaFE's probes, Kubernetes' NotReady
  progress,    // nothing but the job's progress (a collective that hangs)
  user,        // the job's own code fails (a software bug): a user error
  infra_exit,  // the job exits with the site's infrastructure exit code (a dependency, storage)
  none,        // nothing at all (silent data corruption caught by the job's own loss checks)
};

// What a fault does to a job on the node (or to the job itself).
enum class Effect {
  crash,    // the job fails at once
  hang,     // the job stops making progress and keeps its nodes
  degrade,  // the job runs on until the fault kills it `degrade_s` later (thermal, a failing host)
};

struct Cause {
  std::string name;
  double share = 0;         // weight in the mix (Llama 3's Table 5 counts)
  bool node_level = true;   // the node is faulty until repaired (else the job alone is hit)
  Visibility visible = Visibility::health;
  Effect effect = Effect::crash;
  bool urgent = true;       // SaFE's health check drains at the first failing run (else the second)
  bool gpu = false;         // a GPU's: the prolog's and epilog's GPU gates see it too
  double repair_h = 0;      // mean time a node is out of service for repair once taken out
};

// Seconds of everything that is not computation. One set for all policies.
struct Costs {
  double startup_s = 180;     // allocation to the first step: launch, NCCL init (at 2k nodes)
  double restore_s = 120;     // loading the checkpoint on a restart
  double save_s = 10;         // a checkpoint save blocks training this long (asynchronous saves)
  double degrade_s = 1800;    // a degrading fault kills the job this long after it starts
  double broken_start_s = 60; // a job started on a faulty node fails this long after it starts
  double nccl_watchdog_s = 600;   // PyTorch's NCCL watchdog ends a hung collective (its default, 10 min)
  double human_delay_s = 900;     // a careful on-call admin, or the job's owner, acts this long after a failure
  double bug_fix_s = 2 * 3600;    // a software bug that recurs is fixed this long after it first struck
  // Slurm (../shared/slurm-notes.md)
  double slurmd_timeout_s = 300;  // SlurmdTimeout's default
  double requeue_hold_s = 120;    // BeginTime Slurm gives a job it requeued itself
  double wind_down_s = 5;         // a requeued run's processes ending (KillWait is the limit)
  int max_batch_requeue = 5;      // Slurm holds a job it requeued this often (22.05; MaxBatchRequeue)
  // SaFE (docs/controller.md, docs/health.md)
  double safed_pass_s = 1;        // controller.poll_interval_ms
  double probe_detect_s = 4;      // slurmd_probe: 3 failed probes, 1 s apart, 1 s timeout
  double health_interval_s = 300; // health.interval_s
  double hang_timeout_s = 300;    // the job's --safe-hang-timeout, below NCCL's watchdog (docs/user-guide.md)
  int retries = 50;               // the job's --safe-retries (the most there is)
  // Primus-SaFE (../shared/reference/primus-safe.md)
  double primus_retry_s = 30;     // a failed pod to its replacement running
  double primus_hang_s = 1200;    // its hang detection: the log not growing this long
  double k8s_eviction_s = 340;    // NotReady after 40 s, pods evicted 300 s later (defaults)
  int primus_max_retry = 50;      // maxRetry's cap
};

struct JobSpec {
  double submit_s = 0;
  int nodes = 1;
  double work_s = -1;  // compute the job needs; < 0: it runs until the end of the simulation
};

struct Scenario {
  std::string name;
  int gpus_per_node = 8;
  int nodes = 0;              // in the cluster, spares not counted
  double days = 0;
  std::vector<int> ckpt_intervals_min;
  std::vector<int> spares;    // extra nodes the cluster has beside `nodes`
  double node_faults_per_node_day = 0;  // an ordinary node's rate (lemons have lemon_factor times it)
  double job_faults_per_node_hour = 0;  // the job-level causes, per node-hour a job runs
  int lemons = 0;
  double lemon_factor = 10;
  double persistent_bug_share = 0.25;   // a software bug that strikes again on every restart until fixed
  std::vector<Cause> causes;
  Costs costs;
  // The mixed cluster's workload: jobs arrive for `days` at this share of the cluster's GPU time.
  double load = 0;
  std::vector<int> job_nodes;  // sizes a job draws from, each as likely
  double job_work_mean_h = 0;
};

// Llama 3 pre-training (Dubey et al. 2024): 2,048 nodes x 8 GPUs, 54 days, 419 unexpected
// interruptions with Table 5's mix. `short_run`: 6 days, one checkpoint interval and spare count.
Scenario llama3(bool short_run);
// A shared cluster of many jobs (8 to 1,024 GPUs) at Meta RSC-1's node failure rate.
Scenario mixed(bool short_run);
// Meta's model (Kokolis et al. 2024): a 16k-GPU job, failures every 1.8 h, nothing but the
// restart's fixed cost and the recomputation: the simulator's accounting against its figures.
Scenario meta_model();

struct TraceFault {
  double time_s = 0;
  int node = -1;   // node-level: the node (spares are the last nodes)
  int job = -1;    // job-level: the job (by JobSpec index)
  int cause = 0;
  double repair_s = 0;
  bool persistent = false;  // a software bug that recurs until fixed
};

struct Trace {
  std::vector<JobSpec> jobs;
  std::vector<TraceFault> faults;  // by time
  std::vector<bool> lemon;         // by node
  int cluster_nodes = 0;           // nodes + spares
  std::uint64_t digest = 0;        // of everything above: the same trace gives the same digest
};

// Draws the trace for `spares` extra nodes from `seed`. Node faults are drawn for the largest
// spare count of the scenario and those beyond `spares` dropped, so the nodes every run shares
// get the same faults whatever its spare count.
Trace draw_trace(const Scenario& scenario, int spares, std::uint64_t seed);

}  // namespace safe::sim
