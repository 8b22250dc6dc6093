#include "controller/safed/safed_daemon.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "common/authenticator.hpp"
#include "common/http_service.hpp"
#include "common/job_user.hpp"
#include "common/slurm/libslurm.hpp"
#include "common/daemon_log.hpp"
#include "common/sha256.hpp"
#include "common/systemd_notify.hpp"
#include "common/user_directory.hpp"
#include "controller/safed/clock_step.hpp"
#include "controller/safed/cluster_shape_publisher.hpp"
#include "controller/safed/controller_api.hpp"
#include "controller/safed/dead_node_detector.hpp"
#include "controller/safed/deadline_reader.hpp"
#include "controller/safed/etcd_journal.hpp"
#include "controller/safed/ettr_history.hpp"
#include "controller/safed/fenced_slurm_actions.hpp"
#include "controller/safed/failover_planner.hpp"
#include "controller/safed/job_files.hpp"
#include "controller/safed/leadership.hpp"
#include "controller/safed/node_gpu_reports.hpp"
#include "controller/safed/slurm_outage.hpp"
#include "controller/safed/slurmd_prober.hpp"
#include "controller/safed/state_store.hpp"
#include "controller/safed/history_report.hpp"
#include "controller/safed/status_report.hpp"

namespace safe {
namespace {

long long now_s() { return static_cast<long long>(std::time(nullptr)); }

// For the periodic chores: intervals that a step of the system clock must not stretch or skip.
long long steady_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

long long steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1" || host == "[::1]";
}

class Safed {
 public:
  Safed(const SafedSettings& settings, std::string host, int port, const SafeConfig& config,
        const std::atomic<bool>& stop, std::atomic<bool>& reload)
      : settings_(settings), host_(std::move(host)), port_(port), config_(config), stop_(stop), reload_(reload),
        db_path_(settings.state_dir + "/safed.sqlite"), store_(db_path_), read_store_(db_path_),
        slurm_(make_libslurm_client()), actions_(*slurm_, [this] { return may_act(); }),
        user_reader_({}, now_s), evidence_reader_({}, now_s),
        files_(config.health.state_dir + "/evidence", user_reader_, evidence_reader_),
        planner_(make_planner(config)), detector_(actions_, store_),
        // Where the job_submit plugin reads the cluster shape: safe.yaml's controller.state_dir,
        // which --state-dir does not change (slurmctld reads safe.yaml, not safed's command line).
        shape_publisher_(cluster_shape_path(config.controller.state_dir)) {
    health_.started = now_s();
    health_.config_sha256 = settings.config_sha256;
    const HaConfig& ha = config.controller.ha;
    if (ha.enabled()) {
      // A call must end well inside the lease; each thread has its own client.
      EtcdEndpoints endpoints{ha.etcd_endpoints, std::min(1000LL, ha.lease_ttl_s * 1000LL / 3)};
      leader_etcd_ = std::make_unique<EtcdClient>(endpoints);
      journal_etcd_ = std::make_unique<EtcdClient>(endpoints);
      journal_ = std::make_unique<EtcdJournal>(*journal_etcd_, ha.prefix);
      LeadershipPolicy policy{ha.lease_ttl_s, std::min(1000LL, ha.lease_ttl_s * 1000LL / 4), 500};
      leadership_ = std::make_unique<Leadership>(*leader_etcd_, journal_->leader_key(), "http://" + settings.listen,
                                                 policy);
      acting_ = false;
      health_.role = "standby";
      // A standby's store changes only by the journal: a write of its own would make it diverge.
      store_.set_require_journal(true);
    }
  }

  int run();

 private:
  std::unique_ptr<FailoverPlanner> make_planner(const SafeConfig& c);
  ControllerData api_data();
  void probe_loop();
  // Under systemd with WatchdogSec=: pings while the main loop, the probes and the lease's loop
  // all turn (heartbeats_), so that systemd restarts a hung safed.
  void watchdog_loop(const SystemdNotifier& systemd);
  // controller.ha: keeps the lease (its own thread), and, in the main loop, acts on the role:
  // a standby follows the journal, an instance that became active catches up with it first.
  void leadership_loop();
  bool act_on_role();
  void stop_acting();  // under mutex_
  // True without controller.ha; with it, while this instance holds the lease under the token it
  // acts with. Called under mutex_, right before each change sent to Slurm.
  bool may_act();
  bool follow_journal();
  // An instance that became active, its store caught up: appends under `token` from now on, an
  // empty journal starting with a snapshot. The error ("" none), the store left as a standby's.
  std::string start_journal(long long token);
  // Appends a snapshot of the store; the error, "" for none.
  std::string write_snapshot();
  // The active instance, after a pass: a snapshot when the journal holds snapshot_every entries
  // after its oldest.
  void snapshot_if_due();
  void reload_config();
  void reconcile_pass();
  void read_spare_inputs();
  void watch_clock();
  void publish_shape(long long now, const std::vector<SlurmNode>& nodes);
  void read_licenses();
  void prune(long long now);
  // Waits for the next pass: at once when a pass waits for reads that just came in.
  void wait_for_next_pass();
  // Sleeps until `until` or until safed stops.
  void sleep_until(std::chrono::steady_clock::time_point until) const;

  const SafedSettings settings_;
  const std::string host_;  // of settings_.listen
  const int port_;
  const SafeConfig config_;
  const std::atomic<bool>& stop_;
  std::atomic<bool>& reload_;
  const std::string db_path_;
  StateStore store_;
  StateStore read_store_;  // the HTTP thread's own connection (WAL: readers do not block)
  std::unique_ptr<SlurmClient> slurm_;
  // What the planner and the detector change in Slurm goes through here: with controller.ha, only
  // while this instance holds the lease (may_act).
  FencedSlurmActions actions_;
  // Job files are read on workers with a deadline, never under `mutex_` (deadline_reader.hpp).
  DeadlineReader user_reader_;
  DeadlineReader evidence_reader_;
  AsyncJobFiles files_;
  JobUserCache user_cache_;
  // As last read from Slurm; declared before planner_, which make_planner gives it to.
  std::unique_ptr<FailoverPlanner> planner_;
  DeadNodeDetector detector_;
  ControllerHealth health_;
  NodeGpuReports gpu_reports_;  // its own lock; told Slurm's nodes after each pass
  ClusterShapePublisher shape_publisher_;
  Heartbeats heartbeats_;
  std::size_t main_beat_ = 0, probe_beat_ = 0, leadership_beat_ = 0;
  std::mutex mutex_;       // guards planner_, detector_, health_, store_, and every libslurm call
  std::mutex read_mutex_;  // read_store_'s one connection, shared by the API's workers
  SlurmOutage outage_;     // Slurm reads failed in a row, and what of them was logged
  // When each chore last ran, in steady_s() seconds; nullopt: not yet.
  std::optional<long long> licenses_at_, pruned_at_, shape_at_;
  ClockStepWatch clock_watch_;
  std::string pass_error_;  // the last failed pass's error, logged once while it repeats
  long long failed_passes_ = 0;  // in a row
  std::string shape_error_, licenses_error_, spares_error_;  // the last ones logged: each is logged once
  std::chrono::steady_clock::time_point next_pass_ = std::chrono::steady_clock::now();
  // controller.ha (all null without): the election on its thread's client, the journal on the
  // main loop's.
  std::unique_ptr<EtcdClient> leader_etcd_, journal_etcd_;
  std::unique_ptr<EtcdJournal> journal_;
  std::unique_ptr<Leadership> leadership_;
  std::mutex leader_mutex_;            // leadership_
  std::atomic<bool> acting_{true};     // false while the standby: no pass, no probe, no action
  long long acting_token_ = 0;         // the fencing token the journal writes under
  std::string follow_error_;           // the last one logged
  // The journal's oldest entry as the active instance knows it: read when it becomes active, then
  // its own snapshots'.
  long long journal_oldest_ = 0;
  long long snapshot_retry_at_ = 0;    // steady_s() before which a failed snapshot is not tried again
  std::string snapshot_error_;         // the last one logged
  // Asked of the leadership thread: the active instance cannot reach Slurm and another can, or
  // cannot bring its store up to the journal.
  std::atomic<bool> resign_requested_{false};
  std::atomic<bool> leadership_stop_{false};  // set once the main loop and the probes have ended
  int catch_up_failures_ = 0;                 // in a row, while holding the lease
  long long logged_token_ = 0;                // the last token "active" was logged for
  std::string resign_reason_;          // under leader_mutex_
  std::optional<long long> slurm_checked_at_;  // the standby's last look at Slurm (steady s)
  std::string member_key() const { return config_.controller.ha.prefix + "/members/http://" + settings_.listen; }
  // Whether this instance reaches Slurm, for the others (Leadership::announce); the active one
  // resigns when it does not and another does.
  void announce_slurm(bool reachable);
  std::optional<std::string> other_reaching_slurm();
};

std::unique_ptr<FailoverPlanner> Safed::make_planner(const SafeConfig& c) {
  auto p = std::make_unique<FailoverPlanner>(c, actions_, store_, files_, slurm_->output_pattern_dialect());
  p->set_user_names([this](std::uint32_t uid) {
    auto user = user_cache_.get(uid, std::time(nullptr));
    return user ? user->name : std::to_string(uid);
  });
  return p;
}

// The API: munge or Slurm JWT, like the bridge (auth in safe.yaml); each user sees their own.
ControllerData Safed::api_data() {
  return {
      [this] {
        std::lock_guard lock(mutex_);
        return render_metrics(*planner_, health_, now_s());
      },
      [this](std::optional<std::uint32_t> user) {
        std::lock_guard lock(mutex_);
        return render_status_json(*planner_, health_, now_s(), user);
      },
      [this](bool all, std::optional<std::uint32_t> user) {
        std::lock_guard lock(read_mutex_);
        return render_jobs_json(read_store_, all, user);
      },
      [this](std::uint32_t id, std::optional<long long> submitted, std::optional<std::uint32_t> user) {
        std::lock_guard lock(read_mutex_);
        return render_job_json(read_store_, id, submitted, user);
      },
      [this] {
        std::lock_guard lock(mutex_);
        return render_workspaces_json(*planner_, health_, now_s());
      },
      [this](long long since, long long step) {
        std::lock_guard lock(read_mutex_);
        return render_ettr_history_json(read_store_, since, step);
      },
      [this](long long since, std::optional<std::uint32_t> user) {
        std::lock_guard lock(read_mutex_);
        return render_failovers_json(read_store_, since, user);
      },
      [this](const std::string& node, long long since) {
        std::lock_guard lock(read_mutex_);
        return render_node_faults_json(read_store_, node, since, 1000);
      },
      [this] { return gpu_reports_.render_json(); },
      [this](const NodeGpuReport& report) { return gpu_reports_.put(report, now_s()); },
      [this](const std::string& node) {
        std::lock_guard lock(mutex_);
        if (!acting_)
          return Status(Error{"this safed is the standby; the active one is at " +
                              (health_.active_url.empty() ? std::string("an address etcd does not know yet")
                                                          : health_.active_url)});
        Status released = planner_->release_node(node, now_s());
        for (const auto& line : planner_->take_log()) log_line(line.priority, line.text);
        return released;
      },
  };
}

// The probes wait on sockets without the lock: a round of slow probes never holds up a reconcile
// pass, and the lock is taken only to pick the targets and to act on the results.
void Safed::probe_loop() {
  while (!stop_) {
    heartbeats_.beat(probe_beat_, std::chrono::steady_clock::now());
    SlurmdProbeConfig probe;
    std::vector<ProbeTarget> targets;
    long long targets_pass = 0;
    {
      std::lock_guard lock(mutex_);
      probe = planner_->config().controller.slurmd_probe;
      if (probe.interval_ms > 0 && health_.slurm_ok && acting_) targets = detector_.targets(*planner_);
      targets_pass = planner_->pass();
    }
    auto round_start = std::chrono::steady_clock::now();
    if (!targets.empty()) {
      // A round of many silent nodes lasts a while: each wait for the sockets is a turn.
      auto results = probe_slurmds(targets, probe.timeout_ms, probe.max_in_flight, resolve_target,
                                   [this] { heartbeats_.beat(probe_beat_, std::chrono::steady_clock::now()); });
      std::lock_guard lock(mutex_);
      // The role may have changed hands while the probes ran: a standby acts on nothing.
      if (!acting_) continue;
      try {
        detector_.apply(results, *planner_, {probe.failures, 2, probe.restart_grace_s * 1000LL}, steady_ms(), now_s());
      } catch (const std::exception& e) {
        log_line(LogPriority::warning, std::string("safed: slurmd probe round failed: ") + e.what());
      }
      planner_->set_unanswered_nodes(detector_.unanswered());
      planner_->note_probe_results(results, targets_pass);
      for (const auto& line : detector_.take_log()) log_line(line.priority, line.text);
      health_.probe_targets = targets.size();
      health_.probe_round_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - round_start).count();
      health_.nodes_downed = detector_.downed();
      health_.nodes_resumed = detector_.resumed();
    }
    sleep_until(round_start + std::chrono::milliseconds(probe.interval_ms > 0 ? probe.interval_ms : 1000));
  }
}

void Safed::leadership_loop() {
  auto log_all = [this] {
    for (const auto& line : leadership_->take_log()) log_line(line.priority, line.text);
  };
  // Until the main loop and the probe thread have ended: the lease outlives the last action.
  while (!leadership_stop_) {
    heartbeats_.beat(leadership_beat_, std::chrono::steady_clock::now());
    {
      std::lock_guard lock(leader_mutex_);
      if (resign_requested_.exchange(false)) leadership_->resign(steady_ms(), resign_reason_);
      leadership_->tick(steady_ms());
      log_all();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  // A safed that stops gives the role up at once rather than at the end of its lease.
  std::lock_guard lock(leader_mutex_);
  leadership_->resign(steady_ms());
  log_all();
}

bool Safed::act_on_role() {
  bool leading;
  long long token;
  std::string holder;
  {
    std::lock_guard lock(leader_mutex_);
    leading = leadership_->leading(steady_ms());  // the time once the lock is held
    token = leadership_->token();
    holder = leadership_->holder();
  }
  if (!leading && !acting_) {
    // A standby that reaches Slurm tells the active one, which may then resign to it. Without
    // mutex_: a call may wait on an unreachable slurmctld, and the API must answer meanwhile;
    // nothing else calls libslurm while this instance is the standby (no pass, no probe).
    long long tick = steady_s();
    if (!slurm_checked_at_ || tick - *slurm_checked_at_ >= 2) {
      slurm_checked_at_ = tick;
      announce_slurm(static_cast<bool>(slurm_->load_licenses()));
    }
  }
  // From here on mutex_, and within it leader_mutex_ at times: the only thread that takes both
  // takes them in this order.
  std::lock_guard lock(mutex_);
  health_.active_url = holder;
  if (!leading) {
    // Lost: whatever the pass in flight wrote after this was fenced.
    if (acting_) stop_acting();
    follow_journal();
    health_.journal_position = store_.journal_seq();
    return false;
  }
  if (token != acting_token_) {
    // Active (again, under a new token, or after a pass that failed): the store must hold the
    // whole journal first, so that every open failover goes on from its last recorded phase.
    store_.set_journal(nullptr);
    acting_ = false;
    std::string why = follow_journal() ? start_journal(token) : follow_error_;
    if (!why.empty()) {
      // One that cannot catch up (its store diverged, etcd unreadable) hands the role on.
      if (++catch_up_failures_ >= 3) {
        {
          std::lock_guard leader_lock(leader_mutex_);
          resign_reason_ = "resigned: cannot bring the state store up to the journal: " + why;
        }
        resign_requested_ = true;
        catch_up_failures_ = 0;
      }
      return false;
    }
    catch_up_failures_ = 0;
    planner_ = make_planner(planner_->config());
    acting_token_ = token;
    acting_ = true;
    outage_.reset();  // Slurm's errors as a standby saw them are no reason to resign at once
    health_.role = "active";
    if (token != logged_token_)
      log_line(LogPriority::notice, "safed: active: the state store holds the journal up to entry " + std::to_string(store_.journal_seq()) +
               "; open failovers go on from their recorded phases");
    logged_token_ = token;
  }
  health_.journal_position = store_.journal_seq();
  announce_slurm(outage_.failures() == 0);
  // Cut off from slurmctld but not from etcd, it would hold the role and do nothing: it hands it
  // to an instance that reaches Slurm. A Slurm down for all resigns no one.
  if (outage_.failures() >= 3) {
    if (auto other = other_reaching_slurm()) {
      std::string why = "resigned: Slurm unreachable for " + std::to_string(outage_.failures()) + " passes (" +
                        health_.slurm_error + "), while the safed at " + *other + " reaches it";
      {
        std::lock_guard leader_lock(leader_mutex_);
        resign_reason_ = why;
      }
      resign_requested_ = true;  // the leadership thread revokes the lease
      stop_acting();
      return false;
    }
  }
  return true;
}

std::string Safed::start_journal(long long token) {
  journal_->set_token(token);
  store_.set_journal(journal_.get());
  std::string error;
  auto oldest = journal_->oldest_seq();
  if (!oldest) {
    error = "cannot read the journal's oldest entry in etcd: " + oldest.error();
  } else if (*oldest) {
    journal_oldest_ = **oldest;
  } else {
    // An empty journal starts with everything this store holds (history from before
    // controller.ha, or a journal etcd lost) before any change is appended to it: the standby's
    // store is replaced by it rather than diverging.
    error = write_snapshot();
  }
  if (!error.empty()) {
    store_.set_journal(nullptr);
    journal_->set_token(0);
  }
  return error;
}

std::string Safed::write_snapshot() {
  try {
    store_.snapshot_to_journal();
  } catch (const std::exception& e) {
    return e.what();
  }
  journal_oldest_ = store_.journal_seq();
  log_line(LogPriority::info, "safed: active: snapshot of the state store written as journal entry " + std::to_string(journal_oldest_) +
           "; the entries before it are dropped");
  return "";
}

void Safed::snapshot_if_due() {
  // The journal starts at its newest snapshot (an empty one got its first in start_journal).
  if (!journal_ || !acting_ || store_.journal_seq() - journal_oldest_ < config_.controller.ha.snapshot_every) return;
  long long now = steady_s();
  if (now < snapshot_retry_at_) return;
  std::string error = write_snapshot();
  // Not fatal: the journal grows a while longer. A pause before the next try, so that a failing
  // etcd does not get a whole image in parts every pass.
  snapshot_retry_at_ = error.empty() ? 0 : now + 30;
  if (!error.empty() && error != snapshot_error_) log_line(LogPriority::warning, "safed: active: " + error + "; tried again in 30 s");
  snapshot_error_ = error;
}

bool Safed::may_act() {
  if (!leadership_) return true;
  std::lock_guard lock(leader_mutex_);
  return acting_token_ != 0 && leadership_->leading(steady_ms()) && leadership_->token() == acting_token_;
}

void Safed::stop_acting() {
  store_.set_journal(nullptr);
  journal_->set_token(0);
  acting_ = false;
  acting_token_ = 0;
  health_.role = "standby";
  log_line(LogPriority::notice, "safed: standby: stopped acting");
}

void Safed::announce_slurm(bool reachable) {
  std::lock_guard lock(leader_mutex_);
  leadership_->announce(member_key(), reachable ? "slurm reachable" : "slurm unreachable");
}

std::optional<std::string> Safed::other_reaching_slurm() {
  const std::string prefix = config_.controller.ha.prefix + "/members/";
  auto members = journal_etcd_->list(prefix);
  if (!members) return std::nullopt;
  for (const auto& [key, value] : *members)
    if (key != member_key() && value == "slurm reachable") return key.substr(prefix.size());
  return std::nullopt;
}

bool Safed::follow_journal() {
  for (;;) {
    std::string error;
    try {
      auto entries = journal_->entries_after(store_.journal_seq(), 4);
      if (!entries) {
        error = "cannot read the journal in etcd: " + entries.error();
      } else if (entries->empty()) {
        if (!follow_error_.empty()) log_line(LogPriority::notice, "safed: the journal is followed again");
        follow_error_.clear();
        return true;
      } else {
        for (const auto& entry : *entries) {
          if (!entry.snapshot) {
            store_.apply_journal_entry(entry.seq, entry.data);
            continue;
          }
          // Also a store at the entry before it: the snapshot makes it the active's whatever
          // happened before. Logged for a store behind it (new, or down for long).
          long long had = store_.journal_seq();
          store_.restore_snapshot(entry.seq, entry.data);
          if (had != entry.seq - 1)
            log_line(LogPriority::notice, "safed: the state store replaced by the journal's snapshot (entry " + std::to_string(entry.seq) +
                     ", the store was at entry " + std::to_string(had) + ")");
        }
        continue;
      }
    } catch (const std::exception& e) {
      error = std::string(e.what()) + "; stop safed, move " + db_path_ +
              " aside and start it again: it replays the journal from etcd";
    }
    if (error != follow_error_) log_line(LogPriority::warning, "safed: standby: " + error);
    follow_error_ = error;
    return false;
  }
}

void Safed::sleep_until(std::chrono::steady_clock::time_point until) const {
  while (!stop_ && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
}

// A step of the system clock moves the planner's running timers with it and drops the readers'
// answers, whose times are on the old clock.
void Safed::watch_clock() {
  long long step = clock_watch_.observe(wall_ms(), steady_ms());
  if (!step) return;
  log_line(LogPriority::warning, "safed: the system clock stepped " + std::string(step > 0 ? "forward " : "back ") +
           std::to_string(std::llabs(step)) + " s; running timers (grace periods, hang timeouts, backoffs, the "
           "failover rate limit) move with it, records keep the times they were made at");
  user_reader_.drop_answers();
  evidence_reader_.drop_answers();
  try {
    planner_->shift_clock(step);
  } catch (const std::exception& e) {
    log_line(LogPriority::error, std::string("safed: could not record the open failovers' moved times: ") + e.what());
  }
}

void Safed::reload_config() {
  ConfigResult fresh = load_config_file(settings_.config_path);
  std::lock_guard lock(mutex_);
  if (fresh.ok()) {
    planner_->set_config(*fresh.config);
    health_.config_sha256 = sha256_hex(fresh.text);
    log_line(LogPriority::notice, "safed: reloaded " + settings_.config_path);
  } else {
    log_line(LogPriority::error, "safed: kept the previous config: " + settings_.config_path + " has errors (first: " +
             fresh.errors.front().to_string() + "); fix it and send SIGHUP again");
  }
}

// The hot spares' view for this pass: partitions and reservations, each pass (a pool acts on the
// reservation as it is now); without both, the pass gives no spare and leaves the pools alone.
void Safed::read_spare_inputs() {
  auto partitions = slurm_->load_partitions();
  auto reservations = partitions ? slurm_->load_reservations() : Result<std::vector<SlurmReservation>>(Error{partitions.error()});
  if (!partitions || !reservations) {
    if (reservations.error() != spares_error_)
      log_line(LogPriority::warning, "safed: " + reservations.error() + " (no hot spare is given or kept up meanwhile)");
    spares_error_ = reservations.error();
    planner_->spare_inputs_failed();
    return;
  }
  spares_error_.clear();
  planner_->set_spare_inputs(std::move(*partitions), std::move(*reservations));
}

// One pass: both lists from Slurm, or nothing (never act on partial data); then the planner, and
// the periodic chores.
void Safed::reconcile_pass() {
  std::lock_guard lock(mutex_);
  auto t0 = std::chrono::steady_clock::now();
  watch_clock();
  auto nodes = slurm_->load_nodes();
  auto jobs = nodes ? slurm_->load_jobs() : Result<std::vector<SlurmJob>>(Error{nodes.error()});
  if (!nodes || !jobs) {
    // Wait, with growing pauses (wait_for_next_pass), until both lists load.
    const std::string& error = jobs.error();
    if (outage_.failed(error))
      log_line(LogPriority::warning, "safed: " + error + "; retrying (no action until Slurm answers)");
    health_.slurm_ok = false;
    health_.slurm_error = error;
    for (const auto& line : planner_->take_log()) log_line(line.priority, line.text);
    return;
  }
  if (outage_.ended()) log_line(LogPriority::notice, "safed: Slurm reachable again");
  health_.slurm_ok = true;
  health_.slurm_error.clear();
  long long now = now_s();
  long long tick = steady_s();
  auto due = [tick](std::optional<long long>& last, long long every_s) {
    if (last && tick - *last < every_s) return false;
    last = tick;
    return true;
  };
  if (planner_->needs_partitions()) read_spare_inputs();
  else planner_->spare_inputs_failed();  // none read: nothing stale is acted on
  try {
    planner_->reconcile(*jobs, *nodes, now);
    ++health_.passes;  // a pass rolled back is none: tests count passes in which safed could act
    if (failed_passes_)
      log_line(LogPriority::notice, "safed: reconcile passes succeed again after " + std::to_string(failed_passes_) +
               " failed; going on from the state store");
    failed_passes_ = 0;
    pass_error_.clear();
  } catch (const std::exception& e) {
    // The pass was rolled back: start again from the store, as after a crash of safed. Nothing
    // the pass had not recorded was done (each action waits for its record's commit), so a store
    // that cannot be written (a full disk) holds every action back until it can.
    ++failed_passes_;
    ++health_.failed_passes;
    // With controller.ha: the journal may hold an entry the store does not (appended, then the
    // COMMIT failed): catch up with it before the next pass.
    if (leadership_) acting_token_ = 0;
    std::string error = e.what();
    if (error != pass_error_)
      log_line(LogPriority::error, "safed: reconcile pass failed: " + error + "; safed takes no action it cannot record and retries every "
               "pass (logged once while the error repeats)" +
               (error.find("disk is full") != std::string::npos ? "; free space under " + settings_.state_dir : ""));
    pass_error_ = error;
    for (const auto& line : planner_->take_log())
      if (failed_passes_ == 1) log_line(line.priority, line.text);
    try {
      planner_ = make_planner(planner_->config());
    } catch (const std::exception& reload) {
      log_line(LogPriority::error, std::string("safed: cannot reload the state store: ") + reload.what());
    }
  }
  if (due(pruned_at_, 3600)) prune(now);
  if (due(shape_at_, 10)) publish_shape(now, *nodes);
  std::vector<std::string> names;
  for (const auto& n : *nodes) names.push_back(n.name);
  gpu_reports_.set_nodes(std::move(names));
  if (due(licenses_at_, 10)) read_licenses();
  health_.last_pass = now;
  health_.last_pass_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& line : planner_->take_log()) log_line(line.priority, line.text);
}

void Safed::publish_shape(long long now, const std::vector<SlurmNode>& nodes) {
  auto parts = slurm_->load_partitions();
  Status published = parts ? shape_publisher_.publish(build_cluster_shape(*parts, nodes, now), now)
                           : Status(Error{"safed: " + parts.error()});
  if (!published && published.error() != shape_error_) log_line(LogPriority::warning, published.error());
  shape_error_ = published ? "" : published.error();
}

void Safed::read_licenses() {
  auto licenses = slurm_->load_licenses();
  if (licenses) health_.licenses = *licenses;
  else if (licenses.error() != licenses_error_)
    log_line(LogPriority::warning, "safed: " + licenses.error() + " (the status shows the last licenses read)");
  licenses_error_ = licenses.error();
}

// Hourly: the store keeps finished jobs for controller.keep_history_days; the evidence of jobs
// safed never classified (not SaFE's, or safed was down) goes after a week.
void Safed::prune(long long now) {
  int days = planner_->config().controller.keep_history_days;
  try {
    if (days > 0) {
      long long before = now - 86400LL * days;
      before = std::min(before, now - planner_->config().failover.lemon_window_s);
      store_.begin();
      long long n = store_.prune(before);
      store_.commit();
      if (n)
        log_line(LogPriority::info, "safed: pruned " + std::to_string(n) + " jobs that ended more than " + std::to_string(days) +
                 " days ago from the state store");
    }
  } catch (const std::exception& e) {
    store_.rollback();
    log_line(LogPriority::warning, std::string("safed: pruning the state store failed: ") + e.what());
  }
  files_.sweep_evidence(now - 7 * 86400, 100000);
  user_reader_.forget_idle(std::chrono::seconds(600));
  evidence_reader_.forget_idle(std::chrono::seconds(600));
}

void Safed::wait_for_next_pass() {
  // Reads a pass is waiting for (the evidence of an attempt that just ended, a checkpoint)
  // usually take a millisecond: wait for them, without the lock, and pass again at once.
  bool evidence_answered = evidence_reader_.wait_for_urgent(std::chrono::milliseconds(250));
  if (user_reader_.wait_for_urgent(std::chrono::milliseconds(250)) || evidence_answered) return;
  int delay_ms = planner_->config().controller.poll_interval_ms;
  // Slurm unreachable: pause a little longer each time, up to 5 s. A failed call has already
  // waited inside libslurm (about MessageTimeout, which it spends retrying the connect), so a
  // longer pause only delays the catch-up once slurmctld is back.
  if (outage_.failures()) delay_ms = std::min(5000, delay_ms << std::min(outage_.failures(), 3));
  next_pass_ += std::chrono::milliseconds(delay_ms);
  auto now = std::chrono::steady_clock::now();
  if (next_pass_ < now) next_pass_ = now;
  while (!stop_ && !reload_ && std::chrono::steady_clock::now() < next_pass_)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

void Safed::watchdog_loop(const SystemdNotifier& systemd) {
  // A loop that has not turned for half the period stops the pings, so that systemd kills a hung
  // safed within 1.5 periods; the pings go at a quarter, so that a live one is never late.
  const auto period = *systemd.watchdog();
  std::string logged;  // the stalled loops, or the error, said last
  while (!stop_) {
    auto stalled = heartbeats_.stalled(std::chrono::steady_clock::now(), period / 2);
    std::string loops, why;
    for (const auto& [name, since] : stalled) {
      loops += (loops.empty() ? "" : ", ") + name;
      why += (why.empty() ? "" : ", ") + name + " (" + std::to_string(since) + " s)";
    }
    if (loops.empty()) {
      if (!logged.empty() && logged.rfind("stalled: ", 0) == 0) log_line(LogPriority::notice, "safed: watchdog: every loop turns again");
      auto pinged = systemd.notify("WATCHDOG=1");
      std::string error = pinged ? "" : pinged.error();
      if (!error.empty() && error != logged) log_line(LogPriority::warning, "safed: " + error);
      logged = error;
    } else if ("stalled: " + loops != logged) {
      logged = "stalled: " + loops;
      log_line(LogPriority::error, "safed: watchdog: not telling systemd all is well: stalled: " + why +
               "; systemd restarts safed once WatchdogSec= passes without a ping");
    }
    sleep_until(std::chrono::steady_clock::now() + period / 4);
  }
}

int Safed::run() {
  AuthSettings auth_settings = auth_settings_from(config_.auth);
  if (!config_.auth.jwt_key_file.empty()) {
    auto key = read_jwt_key(config_.auth.jwt_key_file);
    if (!key) {
      log_line(LogPriority::error, "safed: " + key.error());
      return 1;
    }
    auth_settings.jwt_key = *key;
  }
  LibMungeDecoder munge;
  SystemUserDirectory users;
  Authenticator auth(auth_settings, &munge, &users);
  ControllerApi api(auth, api_data());
  raise_open_file_limit();
  HttpServiceSettings http_settings;
  http_settings.host = host_;
  http_settings.port = port_;
  // One route takes a body: a node's GPU grid in a munge credential (a few KiB; 64 GPUs with every
  // check failing, texts clipped as the checker clips them, stay under it).
  http_settings.limits.max_body_bytes = 1 << 20;
  http_settings.limits.max_connections = 1024;
  http_settings.limits.workers = 4;
  HttpService http(http_settings, [&api](const HttpRequest& r) { return api.handle(r); }, ControllerApi::is_inline);
  if (auto started = http.start(); !started) {
    log_line(LogPriority::error, "safed: " + started.error() + "; set controller.listen or --listen");
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(config_.controller.state_dir, ec);
  auto started_at = std::chrono::steady_clock::now();
  main_beat_ = heartbeats_.add("main loop", started_at);
  probe_beat_ = heartbeats_.add("probe loop", started_at);
  if (leadership_) leadership_beat_ = heartbeats_.add("lease loop", started_at);
  std::thread probe_thread([this] { probe_loop(); });
  std::thread leadership_thread;
  if (leadership_) {
    leadership_thread = std::thread([this] { leadership_loop(); });
    log_line(LogPriority::notice, "safed: high availability: elected in etcd (" + config_.controller.ha.etcd_endpoints.front() +
             (config_.controller.ha.etcd_endpoints.size() > 1 ? ", ..." : "") + ") under " +
             config_.controller.ha.prefix + "; standby until it holds the lease");
  }
  log_line(LogPriority::notice, "safed: started; config " + settings_.config_path + ", state " + db_path_ + ", listening on " +
           settings_.listen);
  if (!is_loopback(host_))
    log_line(LogPriority::warning, "safed: warning: " + settings_.listen + " is not a loopback address: credentials and job records cross "
             "the network in clear text; keep controller.listen on 127.0.0.1 or put TLS in front (docs/security.md)");
  const SystemdNotifier systemd = SystemdNotifier::from_environment(getpid());
  if (auto ready = systemd.notify("READY=1"); !ready) log_line(LogPriority::warning, "safed: " + ready.error());
  std::thread watchdog_thread;
  if (systemd.watchdog()) watchdog_thread = std::thread([this, &systemd] { watchdog_loop(systemd); });
  while (!stop_) {
    heartbeats_.beat(main_beat_, std::chrono::steady_clock::now());
    if (reload_.exchange(false)) reload_config();
    if (!leadership_ || act_on_role()) {
      reconcile_pass();
      if (leadership_) {
        std::lock_guard lock(mutex_);
        snapshot_if_due();  // after the pass: a new active instance's first pass is not delayed
      }
    }
    wait_for_next_pass();
  }
  log_line(LogPriority::notice, "safed: stopping");
  if (auto stopping = systemd.notify("STOPPING=1"); !stopping) log_line(LogPriority::warning, "safed: " + stopping.error());
  if (watchdog_thread.joinable()) watchdog_thread.join();
  probe_thread.join();
  leadership_stop_ = true;
  if (leadership_thread.joinable()) leadership_thread.join();
  http.stop();
  return 0;
}

}  // namespace

int run_safed(const SafedSettings& settings, const SafeConfig& config, const std::atomic<bool>& stop,
              std::atomic<bool>& reload) {
  std::string host;
  int port = 0;
  if (!split_listen_address(settings.listen, host, port)) {
    log_line(LogPriority::error, "safed: bad listen address '" + settings.listen + "'; expected HOST:PORT");
    return 1;
  }
  try {
    std::error_code ec;
    std::filesystem::create_directories(settings.state_dir, ec);
    Safed safed(settings, host, port, config, stop, reload);
    return safed.run();
  } catch (const std::exception& e) {
    log_line(LogPriority::error, e.what());
    return 1;
  }
}

}  // namespace safe
