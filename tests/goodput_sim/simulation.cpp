#include "tests/goodput_sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <set>

#include "common/config.hpp"
#include "common/drain_decision.hpp"
#include "common/failure_classification.hpp"
#include "common/health_history.hpp"
#include "common/hostlist.hpp"
#include "common/lemon_detection.hpp"
#include "common/requeue_storm_guard.hpp"
#include "controller/safed/failover_decisions.hpp"

namespace safe::sim {

std::string to_string(Policy p) {
  switch (p) {
    case Policy::plain: return "plain";
    case Policy::primus: return "primus";
    case Policy::safe: return "safe";
  }
  return "?";
}

double TimeAccount::lost() const {
  double sum = 0;
  for (const auto& [cause, s] : lost_by_cause) sum += s;
  return sum;
}

namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();
// The real code takes unix seconds: the simulation's second 0 is this one.
constexpr long long kEpoch = 1'700'000'000;
constexpr int kCheckpointSignal = 10;  // USR1
constexpr double kPrologS = 5;         // safe-prolog's GPU gate refusing a job
constexpr double kBugStrikesAfterS = 300;  // a recurring bug strikes again this far into a run

struct Node {
  std::string name;
  bool faulty = false;  // a fault not yet repaired
  int cause = -1;
  double repair_s = 0;
  bool repairing = false;
  int job = -1;
  // Out of service, each for its own reason.
  bool down = false;         // slurmd gone: Slurm's DOWN (or Kubernetes' NotReady)
  bool drained = false;      // SaFE's health checker, or an admin
  bool quarantined = false;  // SaFE's lemon quarantine: until an admin releases it after its repair
  bool release_pending = false;
  bool tainted = false;      // Primus-SaFE's NoSchedule taint (or its host NotReady)
  bool admin_drained = false;  // by a person, who resumes it once repaired
  std::string drain_reason;  // SaFE's
  bool health_runs = false;  // its health check runs are being simulated (from a fault until it is back)
  HealthHistory health;
  std::vector<long long> fault_times;  // SaFE's recorded faults (lemon detection)
  bool schedulable() const { return !down && !drained && !quarantined && !tainted && !admin_drained; }
};

struct Job {
  JobSpec spec;
  int gpus = 0;
  enum class State { pending, running, done } state = State::pending;
  double eligible_at = 0;
  std::set<int> exclude;
  std::vector<int> nodes;
  std::vector<int> last_nodes;  // of the attempt that ended last
  double work_kept = 0;  // computation kept by checkpoints so far (the resume point)
  bool has_checkpoint = false;
  bool started_once = false;
  // The running attempt.
  int serial = 0;          // every start gets its own: events of an older attempt are stale
  double start = 0, compute_from = 0;
  double stop = kNever;    // computation stopped (hang, a fault that killed it, the signal)
  bool signal_save = false;  // stopped by the checkpoint signal: it saves what it computed
  bool failing = false;    // a fault has struck this attempt: the first one is its cause
  bool left_to_owner = false;  // SaFE will not fail this attempt over
  int cause = -1;          // of the failure being handled
  double fault_t = -1;     // of the interruption whose MTTR is still open
  std::vector<NodeFault> evidence;  // what SaFE saw on the attempt's nodes
  // Accounting of the time the job is not running.
  double mark = 0;
  int bucket = -1;         // cause the waiting counts against; -1: queued before the first start
  int restart_cause = -1;  // cause of the restart in progress (its startup is lost to it)
  // Policies' counters.
  int slurm_requeues = 0;  // plain Slurm's own requeues (held past max_batch_requeue)
  int retries_used = 0;    // SaFE's --safe-retries, Primus-SaFE's maxRetry
  double bug_fixed_at = -1;
  long long last_requeue = 0;
  // SaFE's open failover.
  std::optional<FailoverRecord> failover;
  std::vector<FailoverRecord> failovers;  // done, since the job was last submitted
  bool checkpointed_after_signal = false;
  SlurmJob slurm;
};

struct Event {
  double t;
  long long seq;
  std::function<void()> fn;
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class Simulation {
 public:
  Simulation(const Scenario& s, const Trace& trace, const RunSettings& r)
      : sc_(s), c_(s.costs), trace_(trace), run_(r), limiter_(config_.failover.rate_limit_per_minute) {
    interval_ = r.ckpt_interval_min * 60.0;
    horizon_ = s.days * 86400;
    nodes_.resize(trace.cluster_nodes);
    slurm_nodes_.resize(trace.cluster_nodes);
    for (int i = 0; i < trace.cluster_nodes; ++i) {
      nodes_[i].name = "n" + std::to_string(i + 1);
      slurm_nodes_[i].name = nodes_[i].name;
    }
    for (const JobSpec& spec : trace.jobs) {
      Job j;
      j.spec = spec;
      j.gpus = spec.nodes * s.gpus_per_node;
      j.eligible_at = spec.submit_s;
      j.mark = spec.submit_s;
      j.slurm.id = static_cast<std::uint32_t>(jobs_.size() + 1);
      j.slurm.num_nodes = static_cast<std::uint32_t>(spec.nodes);
      j.slurm.submit_time = kEpoch + static_cast<long long>(spec.submit_s);
      jobs_.push_back(std::move(j));
    }
    hysteresis_.fail_runs = config_.health.fail_runs_before_drain;
    hysteresis_.urgent_fail_runs = config_.health.critical_fail_runs_before_drain;
    hysteresis_.pass_runs = config_.health.pass_runs_before_resume;
    for (int i = 0; i < static_cast<int>(s.causes.size()); ++i)
      if (s.causes[i].visible == Visibility::user) bug_cause_ = i;
  }

  SimResult run() {
    for (int j = 0; j < static_cast<int>(jobs_.size()); ++j) at(jobs_[j].spec.submit_s, [this] { schedule(); });
    for (const TraceFault& f : trace_.faults) at(f.time_s, [this, &f] { strike(f); });
    while (!events_.empty() && events_.top().t <= horizon_) {
      Event e = events_.top();
      events_.pop();
      now_ = e.t;
      e.fn();
    }
    now_ = horizon_;
    return finish();
  }

 private:
  // ---- events and time
  void at(double t, std::function<void()> fn) { events_.push({std::max(t, now_), seq_++, std::move(fn)}); }
  // `fn` only while the job's attempt `serial` is the one running.
  void at_attempt(double t, int j, std::function<void()> fn) {
    int serial = jobs_[j].serial;
    at(t, [this, j, serial, fn = std::move(fn)] {
      if (jobs_[j].state == Job::State::running && jobs_[j].serial == serial) fn();
    });
  }
  long long unix_now() const { return kEpoch + static_cast<long long>(std::floor(now_)); }
  const Cause& cause(int c) const { return sc_.causes[c]; }

  // ---- a run's computation: cycles of `interval_` computing and `save_s` saving from compute_from
  double cycle() const { return interval_ + c_.save_s; }
  double computed(const Job& j, double t) const {
    double e = std::max(0.0, t - j.compute_from);
    double n = std::floor(e / cycle());
    return n * interval_ + std::min(e - n * cycle(), interval_);
  }
  double checkpointed(const Job& j, double t) const {
    return std::floor(std::max(0.0, t - j.compute_from) / cycle()) * interval_;
  }
  double saving_time(const Job& j, double t) const {
    double e = std::max(0.0, t - j.compute_from);
    double n = std::floor(e / cycle());
    return n * c_.save_s + std::max(0.0, e - n * cycle() - interval_);
  }
  // When the job finishes its remaining work without faults (kNever for one that runs on).
  double finish_time(const Job& j) const {
    if (j.spec.work_s < 0) return kNever;
    double left = std::max(0.0, j.spec.work_s - j.work_kept);
    double saves = std::max(0.0, std::ceil(left / interval_) - 1);
    return j.compute_from + left + saves * c_.save_s;
  }

  void lose(int cause_index, double gpu_s) {
    if (gpu_s <= 0) return;
    result_.time.lost_by_cause[cause_index < 0 ? "start" : cause(cause_index).name] += gpu_s;
  }
  // The job waited from its mark until now: queued before its first start, else lost to a cause.
  void account_wait(Job& j) {
    double waited = std::max(0.0, now_ - j.mark) * j.gpus;
    if (j.bucket < 0) result_.time.queued += waited;
    else lose(j.bucket, waited);
    if (j.bucket >= 0) result_.waiting_for_nodes_s += std::max(0.0, now_ - std::max(j.mark, j.eligible_at));
    j.mark = now_;
  }
  // The attempt ended now; `kept_all`: its computation counts whole (it completed, or the run is over).
  void account_attempt(Job& j, bool kept_all) {
    double end = now_;
    double stop = std::min(j.stop, end);
    double startup = std::max(0.0, std::min(end, j.compute_from) - j.start) * j.gpus;
    if (j.restart_cause < 0) result_.time.startup += startup;
    else lose(j.restart_cause, startup);
    double done = computed(j, stop), kept = checkpointed(j, stop), saving = saving_time(j, stop);
    double after = end - std::max(stop, j.compute_from);  // hung, or saving on the signal, or winding down
    if (kept_all) kept = done;
    if (j.signal_save && stop + c_.save_s <= end) {
      kept = done;
      saving += c_.save_s;
      after -= c_.save_s;
    }
    result_.time.productive += kept * j.gpus;
    result_.time.checkpoint += saving * j.gpus;
    lose(j.cause, (done - kept) * j.gpus);
    lose(j.cause, std::max(0.0, after) * j.gpus);
    j.work_kept += kept;
    j.has_checkpoint = j.has_checkpoint || kept > 0;
    j.mark = end;
    j.bucket = j.cause;
    j.restart_cause = j.cause;
  }

  // ---- the cluster
  void set_slurm_node(int n) {
    const Node& node = nodes_[n];
    SlurmNode& s = slurm_nodes_[n];
    s.down = s.state_down = node.down;
    s.drain = node.drained || node.quarantined || node.tainted || node.admin_drained;
    s.busy = node.job >= 0;
  }
  void release_nodes(Job& j) {
    for (int n : j.nodes) {
      nodes_[n].job = -1;
      set_slurm_node(n);
    }
    j.nodes.clear();
    at(now_, [this] { schedule(); });
  }
  // A faulty node just left service: its repair starts.
  void start_repair(int n) {
    Node& node = nodes_[n];
    if (!node.faulty || node.repairing || node.schedulable()) return;
    node.repairing = true;
    at(now_ + node.repair_s, [this, n] { repaired(n); });
  }
  // An admin looks at a quarantined node once it is repaired and releases it (safectl node release).
  void release_after_repair(int n) {
    Node& node = nodes_[n];
    double when = (node.repairing || node.faulty ? kNever : now_) + c_.human_delay_s;
    if (when == kNever) {
      node.release_pending = true;  // repaired() comes back here
      return;
    }
    at(when, [this, n] {
      nodes_[n].quarantined = false;
      nodes_[n].fault_times.clear();
      set_slurm_node(n);
      schedule();
    });
  }
  void repaired(int n) {
    Node& node = nodes_[n];
    node.faulty = false;
    node.repairing = false;
    node.down = false;  // slurmd is back (ReturnToService), the host Ready again
    if (cause(node.cause).visible == Visibility::node_down) node.tainted = false;
    node.admin_drained = false;  // the admin who drained it resumes it
    if (node.release_pending) {
      node.release_pending = false;
      release_after_repair(n);
    }
    // SaFE's health checker resumes its own drain, Primus-SaFE's node agent lifts its taint: at
    // their next runs (health_run).
    set_slurm_node(n);
    schedule();
  }

  // ---- health checks (SaFE's checker; Primus-SaFE's node agent), simulated for a node from its
  // fault until it is back in service: each node runs on its own phase of the interval.
  double next_health_run(int n) const {
    double phase = std::fmod(n * 7.919, c_.health_interval_s);
    double k = std::ceil((now_ - phase) / c_.health_interval_s + 1e-9);
    return phase + k * c_.health_interval_s;
  }
  void watch_health(int n) {
    if (nodes_[n].health_runs || run_.policy == Policy::plain) return;
    nodes_[n].health_runs = true;
    at(next_health_run(n), [this, n] { health_run(n); });
  }
  void health_run(int n) {
    Node& node = nodes_[n];
    bool visible = node.faulty && cause(node.cause).visible == Visibility::health;
    if (run_.policy == Policy::primus) {
      if (visible && !node.tainted) {
        node.tainted = true;
        set_slurm_node(n);
        start_repair(n);
        if (node.job >= 0) primus_fail(node.job, node.cause);  // proactive failover, no checkpoint
      } else if (!visible && node.tainted && !node.faulty) {
        node.tainted = false;
        set_slurm_node(n);
        schedule();
      }
    } else {
      bool urgent = !visible || cause(node.cause).urgent;
      std::vector<CheckResult> results{visible ? failed("hardware", Severity::critical, urgent, cause(node.cause).name)
                                               : passed("hardware", Severity::critical, urgent)};
      RunVerdict verdict = apply_run(node.health, results, hysteresis_);
      NodeStatus status;
      status.name = node.name;
      status.state = std::string(node.job >= 0 ? "ALLOCATED" : "IDLE") + (node.drained ? "+DRAIN" : "");
      if (node.down) status.state = "DOWN";
      if (node.drained) status.reason = node.drain_reason;
      if (node.quarantined) status.reason = std::string(kQuarantinePrefix) + " lemon";
      DrainDecision d = decide_drain(status, verdict, false);
      if (d.action == NodeAction::drain) {
        safe_takes_out(n, "safe_drain", d.reason);
      } else if (d.action == NodeAction::resume) {
        node.drained = false;
        set_slurm_node(n);
        schedule();
      }
    }
    if (node.faulty || node.drained || node.tainted) at(now_ + c_.health_interval_s, [this, n] { health_run(n); });
    else node.health_runs = false;
  }

  // SaFE took node `n` out (drain, DOWN): the fault is recorded, the node perhaps a lemon.
  void safe_takes_out(int n, const std::string& kind, const std::string& detail) {
    Node& node = nodes_[n];
    if (kind == "down") {
      node.down = true;
    } else {
      node.drained = true;
      node.drain_reason = detail;
    }
    set_slurm_node(n);
    start_repair(n);
    node.fault_times.push_back(unix_now());
    if (!node.quarantined &&
        is_lemon(node.fault_times, unix_now(), config_.failover.lemon_faults, config_.failover.lemon_window_s)) {
      node.quarantined = true;
      ++result_.quarantines;
      set_slurm_node(n);
      release_after_repair(n);
    }
    if (node.job >= 0) {
      Job& j = jobs_[node.job];
      j.evidence.push_back({node.name, kind, detail});
      if (kind == "safe_drain" && !j.failover) at(now_ + c_.safed_pass_s, [this, jid = node.job, s = j.serial] {
          if (jobs_[jid].state == Job::State::running && jobs_[jid].serial == s) safe_running_on_bad_node(jid);
        });
    }
    watch_health(n);
  }

  // ---- the scheduler: FIFO, with backfill of smaller jobs that do not delay the first one
  // The first job in line that may start but does not fit holds a reservation (EASY backfill);
  // later jobs may start now only where they do not delay it. A job whose start time has not come
  // (a requeue's hold or StartTime, a retry's delay) holds nothing, in Slurm as in Kubernetes.
  void schedule() {
    std::vector<int> free;  // in service and idle, by index
    for (int n = 0; n < static_cast<int>(nodes_.size()); ++n)
      if (nodes_[n].job < 0 && nodes_[n].schedulable()) free.push_back(n);
    double shadow = kNever;
    int spare_at_shadow = 0;
    bool blocked = false;
    for (int id = 0; id < static_cast<int>(jobs_.size()); ++id) {
      Job& j = jobs_[id];
      if (j.state != Job::State::pending || j.spec.submit_s > now_ || j.eligible_at > now_) continue;
      std::vector<int> usable;
      for (int n : free)
        if (!j.exclude.count(n)) usable.push_back(n);
      bool fits = static_cast<int>(usable.size()) >= j.spec.nodes;
      bool go = false;
      if (!blocked) {
        go = fits;
        if (!fits) {
          // The first job that does not fit: when will it, and what can others use meanwhile?
          blocked = true;
          std::vector<std::pair<double, int>> ends;
          for (const Job& r : jobs_)
            if (r.state == Job::State::running) ends.push_back({finish_time(r), static_cast<int>(r.nodes.size())});
          std::sort(ends.begin(), ends.end());
          int have = static_cast<int>(usable.size());
          for (std::size_t k = 0; k < ends.size() && have < j.spec.nodes; ++k) {
            have += ends[k].second;
            if (have >= j.spec.nodes) {
              shadow = ends[k].first;
              spare_at_shadow = have - j.spec.nodes;
            }
          }
        }
      } else if (fits) {
        double expected_end = now_ + c_.startup_s + (j.has_checkpoint ? c_.restore_s : 0) +
                              std::max(0.0, j.spec.work_s - j.work_kept) * (1 + c_.save_s / interval_);
        if (j.spec.work_s >= 0 && expected_end <= shadow) {
          go = true;
        } else if (j.spec.nodes <= spare_at_shadow) {
          spare_at_shadow -= j.spec.nodes;
          go = true;
        }
      }
      if (!go) continue;
      usable.resize(j.spec.nodes);
      std::set<int> taken(usable.begin(), usable.end());
      free.erase(std::remove_if(free.begin(), free.end(), [&](int n) { return taken.count(n) > 0; }), free.end());
      start(id, usable);
    }
  }

  void start(int id, const std::vector<int>& nodes) {
    Job& j = jobs_[id];
    account_wait(j);
    j.nodes = nodes;
    for (int n : j.nodes) {
      nodes_[n].job = id;
      set_slurm_node(n);
    }
    j.state = Job::State::running;
    ++j.serial;
    if (j.started_once) ++result_.restarts;
    j.started_once = true;
    j.start = now_;
    j.compute_from = now_ + c_.startup_s + (j.has_checkpoint ? c_.restore_s : 0);
    j.stop = kNever;
    j.signal_save = false;
    j.failing = false;
    j.left_to_owner = false;
    j.cause = -1;
    j.evidence.clear();
    j.checkpointed_after_signal = false;
    j.slurm.state = SlurmJobState::running;
    j.slurm.completing = false;
    j.slurm.nodes = hostlist_of(j.nodes);
    if (j.spec.work_s >= 0)
      at_attempt(finish_time(j), id, [this, id] {
        if (jobs_[id].stop == kNever) complete(id);  // not hung, stopped, or saving on the signal
      });
    // A fault on one of its nodes that nobody has taken out yet: SaFE's prolog refuses the run,
    // or the run fails on it.
    int latent = -1;
    for (int n : j.nodes)
      if (nodes_[n].faulty && latent < 0) latent = n;
    if (latent >= 0 && run_.policy == Policy::safe && refused_by_prolog(id, latent)) return;
    // Running again on healthy nodes, past a bug that recurs until fixed: the MTTR's end.
    if (j.fault_t >= 0 && latent < 0 && j.bug_fixed_at <= now_) {
      result_.mttr_s.push_back(now_ - j.fault_t);
      j.fault_t = -1;
    }
    if (latent >= 0) hit_by_latent_fault(id, latent);
    else if (j.bug_fixed_at > now_)
      at_attempt(j.compute_from + kBugStrikesAfterS, id, [this, id] { fail_attempt(id, bug_cause_); });
  }
  std::string hostlist_of(const std::vector<int>& ns) const {
    std::vector<std::string> names;
    for (int n : ns) names.push_back(nodes_[n].name);
    return join_hostlist(names);
  }

  void complete(int id) {
    Job& j = jobs_[id];
    account_attempt(j, true);
    j.state = Job::State::done;
    j.slurm.state = SlurmJobState::complete;
    ++result_.jobs_completed;
    result_.completed_work_gpu_s += j.spec.work_s * j.gpus;
    result_.completed_kept_gpu_s += j.work_kept * j.gpus;
    result_.time.allocated += (now_ - j.spec.submit_s) * j.gpus;
    release_nodes(j);
  }

  // ---- faults
  void strike(const TraceFault& f) {
    if (f.node >= 0) {
      Node& node = nodes_[f.node];
      if (node.faulty || !node.schedulable()) {
        ++result_.faults.out_of_service;
        return;
      }
      node.faulty = true;
      node.cause = f.cause;
      node.repair_s = f.repair_s;
      if (node.job >= 0) ++result_.faults.interrupted;
      else ++result_.faults.idle_node;
      node_fault_seen(f.node);
      if (node.job >= 0) job_hit(node.job, f.cause);
      return;
    }
    Job& j = jobs_[f.job];
    if (j.state != Job::State::running || now_ < j.start) {
      ++result_.faults.job_not_running;
      return;
    }
    ++result_.faults.interrupted;
    if (f.persistent && j.bug_fixed_at < now_) j.bug_fixed_at = now_ + c_.bug_fix_s;
    job_hit(f.job, f.cause);
  }

  // Who notices a node's fault by itself, whatever runs on it.
  void node_fault_seen(int n) {
    const Cause& c = cause(nodes_[n].cause);
    if (c.visible == Visibility::node_down) {
      // Slurm stops scheduling to a node that does not answer its pings; it is DOWN, and out of
      // service, after SlurmdTimeout (SaFE's probes are quicker for nodes running its jobs).
      Node& node = nodes_[n];
      node.tainted = run_.policy == Policy::primus;  // NotReady: Kubernetes schedules nothing there
      double seen = run_.policy == Policy::primus ? c_.k8s_eviction_s
                    : run_.policy == Policy::safe && node.job >= 0 ? c_.probe_detect_s
                                                                   : c_.slurmd_timeout_s;
      node.down = run_.policy != Policy::primus;  // not responding: no new work; DOWN when seen
      set_slurm_node(n);
      at(now_ + seen, [this, n] { node_down_seen(n); });
      return;
    }
    if (c.visible == Visibility::health) watch_health(n);
  }
  void node_down_seen(int n) {
    Node& node = nodes_[n];
    start_repair(n);
    int id = node.job;
    if (run_.policy == Policy::safe) safe_takes_out(n, "down", "Not responding");
    if (id < 0) return;
    Job& j = jobs_[id];
    if (run_.policy == Policy::plain) {
      end_attempt(id, SlurmJobState::node_fail);
      if (j.slurm_requeues < c_.max_batch_requeue) {  // --requeue: Slurm's own, with its hold
        ++j.slurm_requeues;
        requeue(id, now_ + c_.requeue_hold_s);
      } else {
        human(id, false);  // held (JobHoldMaxRequeue) until someone releases it: the count stays
      }
    } else if (run_.policy == Policy::primus) {
      primus_fail(id, node.cause);
    } else {
      end_attempt(id, SlurmJobState::node_fail);
      JobFailure failure;
      failure.end = JobEnd::node_fail;
      failure.node_faults = j.evidence;
      safe_classify(id, failure, false, false);
    }
  }

  // A fault strikes the job's running attempt: on one of its nodes, or the job itself.
  void job_hit(int id, int cause_index) {
    Job& j = jobs_[id];
    if (j.failing) return;  // already failing: the first fault is its cause
    j.failing = true;
    j.cause = cause_index;
    j.fault_t = now_;
    const Cause& c = cause(cause_index);
    if (c.visible == Visibility::node_down) {
      j.stop = now_;  // its processes there are gone; the job waits to be ended (node_down_seen)
      return;
    }
    if (c.effect == Effect::hang) {
      j.stop = now_;
      hung(id);
      return;
    }
    double when = c.effect == Effect::degrade ? now_ + c_.degrade_s : now_;
    at_attempt(when, id, [this, id, cause_index] { fail_attempt(id, cause_index); });
  }
  // A faulty node nobody took out yet: the new run fails on it.
  void hit_by_latent_fault(int id, int n) {
    const Cause& c = cause(nodes_[n].cause);
    Job& j = jobs_[id];
    j.failing = true;
    j.cause = nodes_[n].cause;
    if (j.fault_t < 0) j.fault_t = now_;
    if (c.effect == Effect::hang) {
      j.stop = now_;
      hung(id);
      return;
    }
    double when = now_ + (c.effect == Effect::degrade ? c_.degrade_s : c_.broken_start_s);
    at_attempt(when, id, [this, id, cause_index = j.cause] { fail_attempt(id, cause_index); });
  }
  // safe-prolog's gate finds the faulty GPU before the job runs: it drains the node and Slurm
  // requeues the job, which never started.
  bool refused_by_prolog(int id, int n) {
    const Cause& c = cause(nodes_[n].cause);
    if (!c.gpu || c.effect != Effect::crash) return false;
    Job& j = jobs_[id];
    j.cause = nodes_[n].cause;
    j.failing = true;
    if (j.fault_t < 0) j.fault_t = now_;
    // Nothing of the user's runs: the allocation's seconds until Slurm requeues it are the fault's.
    j.compute_from = now_ + kPrologS;
    j.stop = now_;
    j.restart_cause = j.cause;
    int cause_index = j.cause;
    at_attempt(now_ + kPrologS, id, [this, id, n, cause_index] {
      Job& job = jobs_[id];
      job.cause = cause_index;
      job.evidence.push_back({nodes_[n].name, "prolog", cause(cause_index).name});
      safe_takes_out(n, "safe_drain", "SaFE: " + cause(cause_index).name);
      end_attempt(id, SlurmJobState::pending);
      ++job.slurm.restart_count;  // Slurm requeued it
      job.eligible_at = now_ + c_.requeue_hold_s;
      JobFailure failure;
      failure.end = JobEnd::refused_by_prolog;
      failure.node_faults = job.evidence;
      safe_classify(id, failure, true, true);
    });
    return true;
  }

  // The job stopped making progress: who notices first.
  void hung(int id) {
    Job& j = jobs_[id];
    int cause_index = j.cause;
    // The NCCL watchdog ends a hung collective in any case.
    at_attempt(now_ + c_.nccl_watchdog_s, id, [this, id, cause_index] { fail_attempt(id, cause_index); });
    if (run_.policy == Policy::primus)
      at_attempt(now_ + c_.primus_hang_s, id, [this, id, cause_index] { primus_fail(id, cause_index); });
    if (run_.policy == Policy::safe)
      at_attempt(now_ + c_.hang_timeout_s, id, [this, id] {
        if (jobs_[id].failover) return;
        JobFailure failure;
        failure.end = JobEnd::hung;
        failure.hang_detail = "no output and no heartbeat";
        safe_classify(id, failure, false, false);
      });
  }

  // The attempt's processes ended by themselves (a crash, the watchdog, a recurring bug).
  void fail_attempt(int id, int cause_index) {
    Job& j = jobs_[id];
    if (j.cause < 0 || !j.failing) {  // a recurring bug: the attempt had no fault before
      j.failing = true;
      j.cause = cause_index;
      if (j.fault_t < 0) j.fault_t = now_;
    }
    if (j.failover) {  // SaFE is failing it over already: the run stopped, its grace is over
      end_attempt(id, SlurmJobState::failed);
      return;
    }
    if (j.left_to_owner) {  // SaFE classified this attempt already and left it to its owner
      end_attempt(id, SlurmJobState::failed);
      human(id);
      return;
    }
    const Cause& c = cause(j.cause);
    end_attempt(id, SlurmJobState::failed);
    if (run_.policy == Policy::plain) {
      human(id);
    } else if (run_.policy == Policy::primus) {
      primus_retry(id);
    } else {
      // The epilog's GPU gate finds a faulty GPU on the nodes the job ran on and drains it.
      for (int n : j.last_nodes)
        if (nodes_[n].faulty && cause(nodes_[n].cause).gpu && nodes_[n].schedulable()) {
          j.evidence.push_back({nodes_[n].name, "epilog", "SaFE: " + cause(nodes_[n].cause).name});
          safe_takes_out(n, "safe_drain", "SaFE: " + cause(nodes_[n].cause).name);
        }
      JobFailure failure;
      failure.end = JobEnd::failed;
      failure.exit_code = c.visible == Visibility::infra_exit ? config_.failover.infra_exit_codes.front() : 1;
      failure.node_faults = j.evidence;
      safe_classify(id, failure, false, false);
    }
  }

  // Slurm ends the running attempt now with `state`; its nodes are free.
  void end_attempt(int id, SlurmJobState state) {
    Job& j = jobs_[id];
    if (j.state != Job::State::running) return;
    if (j.cause < 0) j.cause = j.restart_cause;
    account_attempt(j, false);
    j.state = Job::State::pending;
    j.eligible_at = kNever;  // until someone requeues or resubmits it
    j.slurm.state = state;
    j.last_nodes = j.nodes;
    release_nodes(j);
  }
  void requeue(int id, double eligible) {
    Job& j = jobs_[id];
    end_attempt(id, SlurmJobState::pending);
    ++j.slurm.restart_count;
    j.slurm.state = SlurmJobState::pending;
    j.eligible_at = eligible;
    at(eligible, [this] { schedule(); });
  }

  // A person resubmits the job (or releases its hold) human_delay_s after it failed, after a
  // recurring bug is fixed; a careful admin first drains the faulty node the failure points at.
  void human(int id, bool resubmit = true) {
    Job& j = jobs_[id];
    double when = std::max(now_ + c_.human_delay_s, j.bug_fixed_at);
    std::vector<int> nodes = j.last_nodes;
    at(when, [this, id, nodes, resubmit] {
      Job& job = jobs_[id];
      for (int n : nodes)
        if (nodes_[n].faulty && nodes_[n].schedulable() && cause(nodes_[n].cause).node_level) {
          nodes_[n].admin_drained = true;
          set_slurm_node(n);
          start_repair(n);
        }
      ++result_.human_resubmits;
      job.retries_used = 0;
      if (resubmit) job.slurm_requeues = 0;
      job.failover.reset();
      job.failovers.clear();
      job.exclude.clear();
      job.eligible_at = now_;
      schedule();
    });
  }

  // ---- Primus-SaFE: every failure retried (delete and re-create) up to maxRetry, no checkpoint
  // signal, taints only.
  void primus_fail(int id, int cause_index) {
    Job& j = jobs_[id];
    if (!j.failing) {
      j.failing = true;
      j.cause = cause_index;
      if (j.fault_t < 0) j.fault_t = now_;
    }
    end_attempt(id, SlurmJobState::failed);
    primus_retry(id);
  }
  void primus_retry(int id) {
    Job& j = jobs_[id];
    if (j.retries_used >= c_.primus_max_retry) {
      human(id);
      return;
    }
    ++j.retries_used;
    j.eligible_at = now_ + c_.primus_retry_s;
    at(j.eligible_at, [this] { schedule(); });
  }

  // ---- SaFE: the controller's own decisions
  void safe_running_on_bad_node(int id) {
    Job& j = jobs_[id];
    if (j.failover) return;
    if (!j.failing) {  // the health check found it before the job failed (a degrading fault)
      j.failing = true;
      j.cause = -1;
      for (int n : j.nodes)
        if (nodes_[n].faulty) j.cause = nodes_[n].cause;
      if (j.cause < 0) j.cause = j.restart_cause;
      if (j.fault_t < 0) j.fault_t = now_;
    }
    JobFailure failure;
    failure.end = JobEnd::running_on_bad_node;
    failure.node_faults = j.evidence;
    safe_classify(id, failure, false, false);
  }

  void safe_classify(int id, const JobFailure& failure, bool by_slurm, bool refused) {
    Job& j = jobs_[id];
    if (j.failover) return;
    Classification c = classify_failure(failure, config_.failover);
    ++result_.classified[std::string(to_string(c.failure_class))];
    AfterFailure after = decide_after_failure(by_slurm, refused, false, is_retried(c.failure_class, config_.failover),
                                              j.retries_used, c_.retries);
    if (after != AfterFailure::fail_over) {
      // Recorded only: a job still running (hung, or on a drained node) runs on until it ends,
      // and its owner resubmits it then.
      if (j.state == Job::State::running) j.left_to_owner = true;
      else human(id);
      return;
    }
    FailoverRecord f;
    f.job_id = j.slurm.id;
    f.submitted = j.slurm.submit_time;
    f.attempt = by_slurm ? j.slurm.restart_count - 1 : j.slurm.restart_count;
    f.failure_class = std::string(to_string(c.failure_class));
    f.evidence = c.evidence;
    f.bad_nodes = join_hostlist(c.bad_nodes);
    f.fault_time = static_cast<long long>(kEpoch + j.fault_t);
    f.not_before = std::min(j.last_requeue, unix_now()) +
                   failover_backoff_s(j.retries_used, config_.failover.backoff_initial_s, config_.failover.backoff_max_s);
    f.requeue_time = by_slurm ? unix_now() : 0;
    f.phase = by_slurm ? FailoverPhase::requeued : FailoverPhase::waiting;
    f.uses_retry = !refused;
    j.failover = f;
    at(now_ + c_.safed_pass_s, [this, id] { safed_pass(id); });
  }

  // One reconcile pass over the job's failover, as failover_executor.cpp takes it: phase after
  // phase until one has to wait (at most 6, as there).
  void safed_pass(int id) {
    Job& j = jobs_[id];
    for (int phases = 0; phases < 6 && j.failover; ++phases)
      if (!safed_phase(id)) break;
    if (j.failover) at(now_ + c_.safed_pass_s, [this, id] { safed_pass(id); });
  }
  // One phase of the failover: true when it moved on to the next.
  bool safed_phase(int id) {
    Job& j = jobs_[id];
    FailoverRecord& f = *j.failover;
    long long now = unix_now();
    switch (f.phase) {
      case FailoverPhase::waiting: {
        FailoverStep s = decide_waiting(f, j.slurm, kCheckpointSignal, now);
        if (s.kind != FailoverStep::Kind::begin) return false;
        bool node_fault = f.failure_class == to_string(FailureClass::node_fault);
        if (!limiter_.try_acquire(now, "tenant-" + std::to_string(id % 8), node_fault)) return false;
        if (s.signal) {
          f.signal_time = now;
          f.phase = FailoverPhase::signalled;
          signal_job(id);
        } else {
          f.phase = FailoverPhase::requeueing;
        }
        return true;
      }
      case FailoverPhase::signalled: {
        FailoverStep s = decide_signalled(f, j.slurm, config_.checkpoint.grace_s, j.checkpointed_after_signal, now);
        if (s.kind != FailoverStep::Kind::stop_waiting) return false;
        f.phase = FailoverPhase::requeueing;
        return true;
      }
      case FailoverPhase::requeueing: {
        std::vector<RunNode> run;
        for (int n : (j.nodes.empty() ? j.last_nodes : j.nodes))
          run.push_back({nodes_[n].name, nodes_[n].down, nodes_[n].down, false, ""});
        FailoverStep s = decide_requeueing(f, j.slurm, run);
        if (s.kind != FailoverStep::Kind::requeue || s.hold) return false;
        // slurm_requeue: a run still going is killed and winds down; the restart count goes up.
        bool was_running = j.state == Job::State::running;
        end_attempt(id, SlurmJobState::pending);
        ++j.slurm.restart_count;
        j.slurm.state = SlurmJobState::pending;
        j.slurm.completing = was_running;
        j.eligible_at = now_ + c_.requeue_hold_s;  // Slurm's hold, until safed's StartTime
        if (was_running) at(now_ + c_.wind_down_s, [this, id] { jobs_[id].slurm.completing = false; });
        f.requeue_time = now;
        f.phase = FailoverPhase::requeued;
        return true;
      }
      case FailoverPhase::requeued: {
        RestartInputs in;
        for (const FailoverRecord& prev : j.failovers)
          for (auto& n : expand_hostlist(prev.bad_nodes)) in.bad.insert(n);
        for (auto& n : expand_hostlist(f.bad_nodes)) in.bad.insert(n);
        in.left = hostlist_of(j.last_nodes);
        in.num_nodes = static_cast<std::uint32_t>(j.spec.nodes);
        RestartPlacement p = place_restart(in, slurm_nodes_);
        FailoverStep s = decide_requeued(f, j.slurm, p, now);
        if (s.kind != FailoverStep::Kind::restart) return false;
        j.exclude.clear();
        for (auto& name : expand_hostlist(s.placement.exclude)) j.exclude.insert(std::stoi(name.substr(1)) - 1);
        j.eligible_at = static_cast<double>(s.start - kEpoch);
        if (f.uses_retry) ++j.retries_used;
        j.last_requeue = f.requeue_time;
        f.phase = FailoverPhase::done;
        j.failovers.push_back(f);
        j.failover.reset();
        at(j.eligible_at, [this] { schedule(); });
        return true;
      }
      default:
        return false;
    }
  }

  // The checkpoint signal: a trainer that still runs saves at its next step and exits; a hung one
  // cannot.
  void signal_job(int id) {
    Job& j = jobs_[id];
    if (j.state != Job::State::running || j.stop <= now_) return;
    j.stop = now_;
    j.signal_save = now_ >= j.compute_from;
    at_attempt(now_ + (j.signal_save ? c_.save_s : 0), id, [this, id] {
      Job& job = jobs_[id];
      job.checkpointed_after_signal = job.signal_save;
      end_attempt(id, SlurmJobState::complete);  // it exits 0 for SaFE to requeue
    });
  }

  SimResult finish() {
    for (Job& j : jobs_) {
      if (j.state == Job::State::done) continue;
      if (j.state == Job::State::running) {
        account_attempt(j, j.cause < 0);
      } else {
        account_wait(j);
      }
      result_.time.allocated += (horizon_ - j.spec.submit_s) * j.gpus;
    }
    result_.settings = run_;
    result_.jobs = static_cast<int>(jobs_.size());
    result_.trace_faults = static_cast<int>(trace_.faults.size());
    double ran = result_.time.allocated - result_.time.queued;
    result_.ettr = ran > 0 ? result_.time.productive / ran : 0;
    result_.cluster_goodput = result_.time.productive / (static_cast<double>(nodes_.size()) * sc_.gpus_per_node * horizon_);
    result_.allocated_goodput = result_.time.allocated > 0 ? result_.time.productive / result_.time.allocated : 0;
    return result_;
  }

  const Scenario& sc_;
  const Costs& c_;
  const Trace& trace_;
  RunSettings run_;
  SafeConfig config_;
  HysteresisPolicy hysteresis_;
  FailoverRateLimiter limiter_;
  double interval_ = 0, horizon_ = 0, now_ = 0;
  long long seq_ = 0;
  int bug_cause_ = 0;
  std::vector<Node> nodes_;
  std::vector<SlurmNode> slurm_nodes_;
  std::vector<Job> jobs_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  SimResult result_;
};

}  // namespace

SimResult simulate(const Scenario& scenario, const Trace& trace, const RunSettings& settings) {
  return Simulation(scenario, trace, settings).run();
}

}  // namespace safe::sim
