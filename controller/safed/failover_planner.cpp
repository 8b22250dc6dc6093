#include "controller/safed/failover_planner.hpp"

#include <algorithm>
#include <set>
#include <utility>

#include "common/hostlist.hpp"
#include "common/lemon_detection.hpp"
#include "common/signal_name.hpp"
#include "controller/safed/lost_work.hpp"
#include "controller/safed/slurmd_liveness.hpp"

namespace safe {
namespace {

// slurmd refuses to start a requeued job again on a node it just left until the job's old
// credential expires (about 120 s); past that a node is safe to reuse.
constexpr long long kCredentialExpiry_s = 121;

bool has_prefix(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

bool ended(SlurmJobState s) {
  return s != SlurmJobState::pending && s != SlurmJobState::running && s != SlurmJobState::suspended &&
         s != SlurmJobState::other;
}

JobEnd job_end(SlurmJobState s) {
  switch (s) {
    case SlurmJobState::complete: return JobEnd::completed;
    case SlurmJobState::cancelled: return JobEnd::cancelled;
    case SlurmJobState::timeout: return JobEnd::timeout;
    case SlurmJobState::node_fail: return JobEnd::node_fail;
    case SlurmJobState::preempted: return JobEnd::preempted;
    case SlurmJobState::boot_fail: return JobEnd::boot_fail;
    case SlurmJobState::deadline: return JobEnd::deadline;
    case SlurmJobState::out_of_memory: return JobEnd::out_of_memory;
    default: return JobEnd::failed;
  }
}

std::string state_text(SlurmJobState s) {
  switch (s) {
    case SlurmJobState::pending: return "pending";
    case SlurmJobState::running: return "running";
    case SlurmJobState::suspended: return "suspended";
    case SlurmJobState::complete: return "completed";
    case SlurmJobState::cancelled: return "cancelled";
    case SlurmJobState::failed: return "failed";
    case SlurmJobState::timeout: return "timeout";
    case SlurmJobState::node_fail: return "node_fail";
    case SlurmJobState::preempted: return "preempted";
    case SlurmJobState::boot_fail: return "boot_fail";
    case SlurmJobState::deadline: return "deadline";
    case SlurmJobState::out_of_memory: return "out_of_memory";
    default: return "other";
  }
}

ExitStatus job_exit(const SlurmJob& job) {
  ExitStatus e = decode_wait_status(job.exit_code);
  if (e.code == 0 && e.signal == 0) e = decode_wait_status(job.derived_ec);
  return e;
}

}  // namespace

std::string_view to_string(NodeCondition c) {
  switch (c) {
    case NodeCondition::ok: return "ok";
    case NodeCondition::safe_drain: return "safe_drain";
    case NodeCondition::quarantined: return "quarantined";
    case NodeCondition::down: return "down";
    case NodeCondition::admin_drain: return "admin_drain";
  }
  return "ok";
}

NodeCondition node_condition(const SlurmNode& n) {
  if (n.drain && has_prefix(n.reason, kQuarantinePrefix)) return NodeCondition::quarantined;
  if (n.down) return NodeCondition::down;
  if (n.drain && has_prefix(n.reason, kSafeDrainPrefix)) return NodeCondition::safe_drain;
  if (n.drain) return NodeCondition::admin_drain;
  return NodeCondition::ok;
}

FailoverPlanner::FailoverPlanner(SafeConfig config, SlurmClient& slurm, StateStore& store, JobFiles& files)
    : config_(std::move(config)), slurm_(slurm), store_(store), files_(files),
      limiter_(config_.failover.rate_limit_per_minute) {
  for (const auto& f : store_.all_failovers()) {
    if (f.phase != FailoverPhase::done && f.phase != FailoverPhase::refused) open_[{f.key(), f.attempt}] = f;
    if (f.phase == FailoverPhase::done) {
      ++counters_.failovers_by_class[f.failure_class];
      if (f.requeue_time) {
        TrackedJob owner;
        if (auto j = store_.job(f.key())) owner.record = *j;
        limiter_.record(f.requeue_time, tenant_of(owner), f.failure_class == to_string(FailureClass::node_fault));
      }
      if (f.running_again_time) {
        double lost = static_cast<double>(f.running_again_time - f.fault_time);
        counters_.mttr_samples.push_back(lost);
        counters_.time_lost_by_workspace[f.workspace] += lost;
      }
    }
  }
  for (const auto& q : store_.quarantined()) quarantined_[q.node] = q;
}

void FailoverPlanner::set_config(SafeConfig config) {
  config_ = std::move(config);
  limiter_.set_limit(config_.failover.rate_limit_per_minute);
}

std::vector<std::string> FailoverPlanner::take_log() { return std::exchange(log_, {}); }

void FailoverPlanner::log(std::string line) { log_.push_back(std::move(line)); }

void FailoverPlanner::checkpoint_store() {
  store_.commit();
  store_.begin();
}

void FailoverPlanner::log_action(long long now, const JobKey& job, const std::string& node, const std::string& action,
                                 const std::string& detail, bool ok) {
  store_.log_action({now, job, node, action, detail, ok});
  std::string who = job.id ? "job " + std::to_string(job.id) : "node " + node;
  log("safed: " + who + ": " + action + (ok ? "" : " FAILED") + (detail.empty() ? "" : ": " + detail));
}

// Who a failover's share of the rate limit is charged to: the job's workspace, else its user.
std::string FailoverPlanner::tenant_of(const TrackedJob& t) const {
  return t.record.workspace.empty() ? "user " + std::to_string(t.record.user_id) : "workspace " + t.record.workspace;
}

std::string FailoverPlanner::output_path(const SlurmJob& job) const {
  BatchOutputContext c;
  c.job_id = job.id;
  c.array_job_id = job.array_job_id;
  c.array_task_id = job.array_task_id;
  c.restart_count = job.restart_count;
  c.job_name = job.name;
  c.user_name = user_names_(job.user_id);
  c.batch_node = job.batch_host;
  if (const SlurmNode* n = node(job.batch_host)) {
    std::string host = n->hostname.empty() ? n->name : n->hostname;
    c.batch_host_short = host.substr(0, host.find('.'));
  }
  c.work_dir = job.work_dir;
  return batch_output_path(job.std_out, c, slurm_.output_pattern_dialect());
}

void FailoverPlanner::reconcile(const std::vector<SlurmJob>& jobs, const std::vector<SlurmNode>& nodes, long long now) {
  store_.begin();
  try {
    observe_nodes(nodes, now);
    ++pass_;
    for (const SlurmJob& job : jobs) {
      // Cheap filter first: most jobs of a large cluster are not SaFE's.
      if (job.admin_comment.find(kMetadataPrefix) == std::string::npos) continue;
      auto it = jobs_.find(job.id);
      if (it == jobs_.end() || it->second.admin_comment != job.admin_comment) {
        auto meta = parse_job_metadata(job.admin_comment);
        if (!meta) continue;
        if (it != jobs_.end() && it->second.seen && meta->submitted && it->second.meta.submitted &&
            meta->submitted != it->second.meta.submitted) {
          // The id now names another job (Slurm reused it): the old one is gone.
          finish_gone(it->second, now);
          jobs_.erase(it);
        }
        TrackedJob& t = jobs_[job.id];
        t.admin_comment = job.admin_comment;
        t.meta = std::move(*meta);
        it = jobs_.find(job.id);
      }
      it->second.seen_pass = pass_;
      observe_job(job, it->second.meta, now);
    }
    // Failovers of jobs Slurm no longer knows (purged after MinJobAge) cannot go on.
    for (auto it = open_.begin(); it != open_.end();) {
      auto tracked = jobs_.find(it->first.first.id);
      if (tracked != jobs_.end() && tracked->second.seen_pass == pass_ &&
          tracked->second.record.submitted == it->first.first.submitted) {
        ++it;
        continue;
      }
      it->second.phase = FailoverPhase::refused;
      store_.put_failover(it->second);
      log("safed: job " + std::to_string(it->first.first.id) + " left Slurm during its failover; given up");
      it = open_.erase(it);
    }
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      if (it->second.seen_pass != pass_) {
        finish_gone(it->second, now);
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
    store_.commit();
  } catch (...) {
    // What this pass decided but did not commit is undone; the caller starts a new planner from
    // the store (as after a crash), so memory and store agree again.
    store_.rollback();
    throw;
  }
}

void FailoverPlanner::finish_gone(TrackedJob& t, long long now) {
  if (t.record.end_time == 0 && t.seen) {
    t.record.end_time = now;
    if (t.record.state == "running" || t.record.state == "pending") t.record.state = "gone";
    store_.put_job(t.record);
  }
  std::string nodes;
  for (const auto& a : store_.attempts(t.record.key()))
    if (!a.nodes.empty()) nodes += (nodes.empty() ? "" : ",") + a.nodes;
  files_.forget_evidence(t.record.job_id, nodes);
  last_deferral_.erase(t.record.job_id);
}

void FailoverPlanner::observe_nodes(const std::vector<SlurmNode>& nodes, long long now) {
  // The index by name is rebuilt only when the names change (rarely: nodes added or removed).
  // Otherwise the copy below assigns element by element into the same storage, so every pointer
  // in the index still points at the node of that name.
  bool same_names = nodes.size() == nodes_.size() &&
                    std::equal(nodes.begin(), nodes.end(), nodes_.begin(),
                               [](const SlurmNode& a, const SlurmNode& b) { return a.name == b.name; });
  nodes_ = nodes;
  if (!same_names) {
    node_index_.clear();
    node_index_.reserve(nodes_.size());
    for (const SlurmNode& n : nodes_) node_index_[n.name] = &n;
  }
  bad_node_count_ = 0;
  for (const SlurmNode& n : nodes_) {
    NodeCondition c = node_condition(n);
    if (c == NodeCondition::safe_drain || c == NodeCondition::quarantined) ++bad_node_count_;
    auto known = last_fault_key_.find(n.name);
    if (known == last_fault_key_.end()) {
      long long since = std::max(now - config_.failover.lemon_window_s, store_.last_release(n.name));
      faults_[n.name] = store_.node_faults(n.name, since);
      // A node already down without a dated reason when safed starts: its fault's time is
      // unknown, and counting it again at every restart would make a lemon of it.
      std::string first = c == NodeCondition::down && !n.reason_time ? "fault" : "";
      known = last_fault_key_.emplace(n.name, first).first;
    }
    auto q = quarantined_.find(n.name);
    if (q != quarantined_.end() && c != NodeCondition::quarantined) {
      if (n.drain || n.down) {
        // Someone replaced our reason (e.g. the health checker drained it again): restore it.
        std::string err = slurm_.drain_node(n.name, q->second.reason).error();
        if (!err.empty()) log("safed: node " + n.name + ": cannot restore its quarantine: " + err);
      } else {
        store_.release_quarantine(n.name, now);
        log_action(now, {}, n.name, "quarantine ended", "resumed outside SaFE (scontrol)", true);
        quarantined_.erase(q);
        faults_[n.name].clear();
      }
    }
    // One fault per episode: a node that goes from not responding to DOWN, or whose SaFE reason
    // is reworded, has still failed once.
    bool faulty = c == NodeCondition::safe_drain || c == NodeCondition::down;
    if (faulty && known->second.empty()) record_fault(n, c, now);
    known->second = faulty || c == NodeCondition::quarantined ? "fault" : "";
  }
}

void FailoverPlanner::record_fault(const SlurmNode& n, NodeCondition c, long long now) {
  NodeFaultRecord rec{n.name, n.reason_time ? static_cast<long long>(n.reason_time) : now,
                      c == NodeCondition::down ? "down" : "safe_drain", n.reason.empty() ? "not responding" : n.reason};
  if (!store_.add_node_fault(rec)) return;  // seen before this restart
  auto& list = faults_[n.name];
  list.push_back(rec);
  log("safed: node " + n.name + ": fault recorded (" + rec.kind + ": " + rec.detail + ")");
  if (quarantined_.count(n.name)) return;
  std::vector<long long> times;
  for (const auto& f : list) times.push_back(f.time);
  const auto& fc = config_.failover;
  if (!is_lemon(times, now, fc.lemon_faults, fc.lemon_window_s)) return;
  std::string reason = quarantine_reason(n.name, static_cast<int>(times.size()), fc.lemon_window_s, rec.detail);
  checkpoint_store();
  std::string err = slurm_.drain_node(n.name, reason).error();
  log_action(now, {}, n.name, "quarantine", err.empty() ? reason : err, err.empty());
  if (!err.empty()) return;
  QuarantineRecord q{n.name, now, reason};
  store_.set_quarantine(q);
  quarantined_[n.name] = q;
  ++counters_.quarantines;
}

Status FailoverPlanner::release_node(const std::string& node, long long now) {
  auto it = node_index_.find(node);
  bool ours = quarantined_.count(node) > 0 ||
              (it != node_index_.end() && node_condition(*it->second) == NodeCondition::quarantined);
  if (!ours) return Error{"safed: node " + node + " is not quarantined by SaFE; nothing to release"};
  Status resumed = slurm_.resume_node(node);
  log_action(now, {}, node, "quarantine released", resumed ? "by safectl node release" : resumed.error(), resumed.ok());
  if (!resumed) return Error{"safed: cannot resume " + node + ": " + resumed.error()};
  store_.release_quarantine(node, now);
  quarantined_.erase(node);
  faults_[node].clear();  // a released node starts with a clean lemon window
  return ok_status();
}

std::optional<std::vector<NodeFault>> FailoverPlanner::faults_during(TrackedJob& t, const SlurmJob& job,
                                                                     const std::string& nodes, long long from,
                                                                     long long now) {
  std::vector<NodeFault> out;
  std::vector<std::string> names = expand_hostlist(nodes);
  for (const std::string& n : names) {
    auto it = faults_.find(n);
    if (it == faults_.end()) continue;
    for (const auto& f : it->second)
      if (f.time >= from) out.push_back({n, f.kind, f.detail});
  }
  auto evidence = files_.epilog_evidence(job.id, names, from, t.ended_seen ? t.ended_seen : now);
  if (evidence.is_pending()) return std::nullopt;
  if (!evidence.is_known()) log("safed: job " + std::to_string(job.id) + ": epilog evidence unreadable: " + evidence.why);
  for (auto& e : evidence.value) out.push_back(std::move(e));
  return out;
}

// Remembers when safed first saw the end of the job's run `run`: what it reads about that run
// (evidence, the output's tail, checkpoints) must have been read after it.
static void note_ended(TrackedJob& t, int run, long long now) {
  if (t.ended_run == run) return;
  t.ended_run = run;
  t.ended_seen = now;
}

long long FailoverPlanner::known_checkpoint_ns(const TrackedJob& t, const JobMetadata& meta, long long since) {
  if (meta.settings.ckpt_dir.empty()) return 0;
  auto ck = files_.newest_checkpoint_ns(meta.settings.ckpt_dir, config_.checkpoint.complete_marker, t.record.user_id,
                                        since);
  return ck.is_known() ? ck.value : 0;
}

bool FailoverPlanner::reads_for_ended_run(TrackedJob& t, const SlurmJob& job, long long now, JobFailure& failure,
                                          long long& checkpoint) {
  bool ready = true;
  // A run Slurm requeued has left its nodes already: what safed saw it run on.
  bool by_slurm = failure.end == JobEnd::requeued_by_slurm;
  auto faults = faults_during(t, job, by_slurm ? t.attempt_nodes : job.nodes,
                              by_slurm ? t.attempt_start : static_cast<long long>(job.start_time), now);
  if (faults) failure.node_faults = std::move(*faults);
  else ready = false;
  if (failure.end == JobEnd::failed) {
    auto said = output_tail_after_failover(t, job);
    if (said) failure.user_evidence = std::move(*said);
    else ready = false;
  }
  const std::string& dir = t.meta.settings.ckpt_dir;
  if (!dir.empty()) {
    auto ck = files_.newest_checkpoint_ns(dir, config_.checkpoint.complete_marker, t.record.user_id, t.ended_seen);
    if (ck.is_pending()) ready = false;
    checkpoint = ck.is_known() ? ck.value / 1000000000LL : 0;
  }
  return ready;
}

void FailoverPlanner::observe_job(const SlurmJob& job, const JobMetadata& meta, long long now) {
  TrackedJob& t = jobs_[job.id];
  if (!t.seen) {
    t.seen = true;
    // Slurm's SubmitTime moves at every requeue: the submission time admission recorded does not.
    JobKey key{job.id, meta.submitted};
    if (auto r = store_.job(key)) {
      t.record = *r;
      t.record.user_id = job.user_id;  // a store from before user ids has 0
      for (const auto& a : store_.attempts(key)) {
        if (!a.end_state.empty()) t.classified_attempt = std::max(t.classified_attempt, a.attempt);
        if (a.attempt >= t.running_attempt) {
          t.running_attempt = a.attempt;
          t.attempt_nodes = a.nodes;
          t.attempt_start = a.start_time;
        }
      }
    } else {
      t.record.job_id = job.id;
      t.record.submitted = key.submitted;
      t.record.submit_time = meta.submitted ? meta.submitted : static_cast<long long>(job.submit_time);
      t.record.user_id = job.user_id;
      t.record.name = job.name;
      t.record.workspace = meta.settings.workspace;
      t.record.gpus = meta.settings.gpus;
      t.record.user_exclude = job.exc_nodes;
      t.record.state = state_text(job.state);
    }
  }
  const JobKey key = t.record.key();
  struct {
    std::string state, last_class;
    int retries_used, max_retries;
    long long end_time, updated, run_seconds, lost_seconds;
  } before{t.record.state,    t.record.last_class, t.record.retries_used, t.record.max_retries,
           t.record.end_time, t.record.updated,    t.record.run_seconds,  t.record.lost_seconds};
  t.record.max_retries = meta.settings.retries;
  t.record.retries_used = std::max(t.record.retries_used, meta.retries_used);

  // Right after a requeue Slurm still reports the old run as RUNNING (with the REQUEUE flag) and
  // the new restart count: only a run without it is a new attempt.
  if (job.state == SlurmJobState::running && !job.completing && job.restart_count != t.running_attempt) {
    t.running_attempt = job.restart_count;
    t.attempt_nodes = job.nodes;
    t.attempt_start = job.start_time;
    t.output_size = -1;
    t.heartbeat_mtime = 0;
    t.last_progress = now;
    t.no_progress_signal = false;
    store_.put_attempt({job.id, key.submitted, job.restart_count, job.nodes, job.start_time, 0, "", "", "", ""});
    // A failover of an earlier run is over: the job runs again (the MTTR sample).
    for (auto& f : job.restart_count > 0 ? store_.failovers(key) : std::vector<FailoverRecord>{}) {
      if (f.phase != FailoverPhase::done || f.running_again_time || f.attempt >= job.restart_count) continue;
      f.running_again_time = now;
      store_.put_failover(f);
      double lost = static_cast<double>(now - f.fault_time);
      counters_.mttr_samples.push_back(lost);
      counters_.time_lost_by_workspace[f.workspace] += lost;
      log("safed: job " + std::to_string(job.id) + " runs again on " + job.nodes + ", " +
          std::to_string(now - f.fault_time) + " s after the fault");
    }
  }
  if (!ended(job.state) && t.record.end_time == 0 && t.record.state != "failing_over" &&
      !(t.record.state == "held" && job.state == SlurmJobState::pending))
    t.record.state = state_text(job.state);
  if (job.state == SlurmJobState::running) t.expected_start = 0;
  if (t.expected_start && job.state == SlurmJobState::pending && !job.completing &&
      job.start_time > std::max(now, t.expected_start) + 5) {
    // Slurm put its requeue hold back on after our update: lift it again.
    JobChange change;
    change.id = job.id;
    change.start_time = std::max(now, t.expected_start);
    std::string err = slurm_.update_job(change).error();
    log_action(now, key, "", "start again", "Slurm re-held the job" + (err.empty() ? "" : ": " + err), err.empty());
    if (err.empty()) t.expected_start = 0;
  }

  // A failover in progress for this job goes on first.
  for (auto it = open_.empty() ? open_.end() : open_.lower_bound({key, -1});
       it != open_.end() && it->first.first == key;) {
    FailoverRecord& f = it->second;
    advance(f, t, job, meta, now);
    if (f.phase == FailoverPhase::done || f.phase == FailoverPhase::refused) it = open_.erase(it);
    else ++it;
  }
  auto next_open = open_.lower_bound({key, -1});
  bool failing_over = next_open != open_.end() && next_open->first.first == key;

  if (!failing_over) {
    if (job.state == SlurmJobState::running && !job.completing && t.classified_attempt < job.restart_count) {
      JobFailure failure;
      failure.end = JobEnd::running_on_bad_node;
      if (bad_node_count_ > 0 && t.nodes_text != job.nodes) {
        t.nodes_text = job.nodes;
        t.node_names = expand_hostlist(job.nodes);
      }
      for (const std::string& n : bad_node_count_ > 0 ? t.node_names : std::vector<std::string>{}) {
        auto it = node_index_.find(n);
        if (it == node_index_.end()) continue;
        NodeCondition c = node_condition(*it->second);
        if (c == NodeCondition::safe_drain || c == NodeCondition::quarantined)
          failure.node_faults.push_back({n, std::string(to_string(c)), it->second->reason});
      }
      if (failure.node_faults.empty()) {
        t.bad_node_seen = 0;
        check_hang(t, job, meta, now);
      } else {
        // A run the prolog is refusing shows as running on the node it just drained: Slurm
        // requeues it as soon as the prolog exits, and the pending pass below takes it from there.
        // (The answer must be from after the drain was seen, not from this very pass: a read
        // that starts in the next second would otherwise never be fresh enough.)
        if (!t.bad_node_seen) t.bad_node_seen = now;
        auto refusal = files_.prolog_refusal(job.id, job.restart_count, t.bad_node_seen);
        if (!refusal.is_pending() && !refusal.value) {
          t.bad_node_seen = 0;
          start_failover(t, job, meta, failure, now);
        }
      }
    } else if (job.state == SlurmJobState::pending && job.restart_count > 0 &&
               t.classified_attempt < job.restart_count - 1) {
      note_ended(t, job.restart_count - 1, now);
      auto refusal = refusal_of_previous_run(t, job);
      if (refusal.is_pending()) {
        // decided once the prolog's record is read (at most the reader's deadline)
      } else if (refusal.value) {
        JobFailure failure;
        failure.end = JobEnd::refused_by_prolog;
        failure.node_faults.push_back(*refusal.value);
        start_failover(t, job, meta, failure, now);
      } else if (t.running_attempt == job.restart_count - 1) {
        // Slurm requeued it on its own (a node died under a --requeue job).
        JobFailure failure;
        failure.end = JobEnd::requeued_by_slurm;
        long long checkpoint = 0;
        if (reads_for_ended_run(t, job, now, failure, checkpoint)) {
          long long start = t.attempt_start ? t.attempt_start : job.start_time;
          count_attempt(t, start, job.end_time >= start && job.end_time <= now ? job.end_time : now, true, checkpoint);
          start_failover(t, job, meta, failure, now);
        }
      }
    } else if (ended(job.state) && !job.completing && t.classified_attempt < job.restart_count) {
      note_ended(t, job.restart_count, now);
      if (job.state == SlurmJobState::complete) {
        t.classified_attempt = job.restart_count;
        store_.put_attempt({job.id, key.submitted, job.restart_count, job.nodes, job.start_time, job.end_time,
                            "COMPLETED", "", "", ""});
        t.record.state = "completed";
        t.record.end_time = job.end_time;
        count_attempt(t, job.start_time, job.end_time, false, 0);
        files_.forget_evidence(job.id, job.nodes);
      } else {
        JobFailure failure;
        failure.end = job_end(job.state);
        ExitStatus e = job_exit(job);
        failure.exit_code = e.code;
        failure.signal = e.signal;
        long long checkpoint = 0;
        if (reads_for_ended_run(t, job, now, failure, checkpoint)) {
          count_attempt(t, job.start_time, job.end_time, true, checkpoint);
          start_failover(t, job, meta, failure, now);
        }
      }
    }
  }
  if (t.record.state != before.state || t.record.retries_used != before.retries_used ||
      t.record.max_retries != before.max_retries || t.record.end_time != before.end_time ||
      t.record.last_class != before.last_class || t.record.run_seconds != before.run_seconds ||
      t.record.lost_seconds != before.lost_seconds || !before.updated) {
    t.record.updated = now;
    store_.put_job(t.record);
  }
}

void FailoverPlanner::check_hang(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now) {
  int hang = meta.settings.hang_timeout;
  if (hang <= 0) return;
  // An answer from the last pass or two is fresh enough: a new read is on its way each pass.
  long long since = now - std::max(2, 2 * config_.controller.poll_interval_ms / 1000);
  std::string path = output_path(job);
  auto out = files_.progress(path, job.user_id, since);
  auto hb = files_.progress(heartbeat_path(meta.settings.ckpt_dir), job.user_id, since);
  if (out.is_pending() || hb.is_pending()) return;
  if (!out.is_known() && !hb.is_known()) {
    // Nothing safed can read shows progress (output on a file system this host does not mount,
    // /dev/null, another user's file, a read that timed out, no heartbeat): no signal is not "no
    // progress", so the hang clock starts again once there is one.
    if (!t.no_progress_signal)
      log("safed: job " + std::to_string(job.id) + ": no progress signal for --safe-hang-timeout (output " +
          (path.empty() ? "none" : path) + ": " + out.why + "; heartbeat: " + hb.why + ")");
    t.no_progress_signal = true;
    t.last_progress = now;
    return;
  }
  t.no_progress_signal = false;
  if (out.is_known() && out.value.size != t.output_size) {
    t.output_size = out.value.size;
    t.last_progress = now;
  }
  if (hb.is_known() && hb.value.mtime > t.heartbeat_mtime) {
    t.heartbeat_mtime = hb.value.mtime;
    t.last_progress = std::max(t.last_progress, std::min(hb.value.mtime, now));
  }
  if (now - t.last_progress < hang) return;
  JobFailure failure;
  failure.end = JobEnd::hung;
  failure.hang_detail = (out.is_known() ? "no output growth in " + path : "output not readable") +
                        (hb.is_known() ? " and no heartbeat" : "") + " for " + std::to_string(now - t.last_progress) +
                        " s (--safe-hang-timeout=" + std::to_string(hang) + ")";
  start_failover(t, job, meta, failure, now);
}

Observed<std::optional<NodeFault>> FailoverPlanner::refusal_of_previous_run(TrackedJob& t, const SlurmJob& job) {
  int run = job.restart_count - 1;
  if (t.prolog_checked == run) return Observed<std::optional<NodeFault>>::known(std::nullopt);
  auto refusal = files_.prolog_refusal(job.id, run, t.ended_seen);
  if (!refusal.is_pending()) t.prolog_checked = run;
  return refusal;
}

void FailoverPlanner::start_failover(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                                     const JobFailure& failure, long long now) {
  // A run the prolog refused never started: it is failed over like one Slurm requeued after a
  // node fault, but costs the job no retry.
  bool refused = failure.end == JobEnd::refused_by_prolog;
  bool by_slurm = failure.end == JobEnd::requeued_by_slurm || refused;
  int attempt = by_slurm ? job.restart_count - 1 : job.restart_count;
  if (refused && t.running_attempt != attempt) {  // safed never saw it run: it knows the refusing node
    t.attempt_nodes = failure.node_faults.front().node;
    t.attempt_start = now;
  }
  std::string nodes = by_slurm || job.nodes.empty() ? t.attempt_nodes : job.nodes;
  Classification c = classify_failure(failure, config_.failover);
  std::string cls(to_string(c.failure_class));
  ++counters_.failures_by_class[cls];
  t.classified_attempt = attempt;
  long long end_time = failure.end == JobEnd::running_on_bad_node || failure.end == JobEnd::hung
                           ? 0
                           : (job.end_time ? static_cast<long long>(job.end_time) : now);
  const JobKey key = t.record.key();
  store_.put_attempt({job.id, key.submitted, attempt, nodes, t.attempt_start ? t.attempt_start : job.start_time,
                      end_time, std::string(to_string(failure.end)), cls, c.rule, c.evidence});
  // What the prolog and epilog recorded about an attempt that ended is read: it may go.
  if (end_time) files_.forget_evidence(job.id, nodes);
  t.record.last_class = cls;
  t.record.last_evidence = c.evidence;
  log("safed: job " + std::to_string(job.id) + " attempt " + std::to_string(attempt + 1) + ": " + c.summary() + " (" +
      c.rule + ")");

  if (by_slurm && !is_retried(c.failure_class, config_.failover)) {
    // Requeued by an administrator or by Slurm for a reason SaFE has no fault for: theirs to own.
    t.record.state = "pending";
    return;
  }
  if (!is_retried(c.failure_class, config_.failover)) {
    finish_without_failover(t, job, meta, c, "not retried: " + cls + " is not in failover.retry_classes", now);
    return;
  }
  if (!refused && t.record.retries_used >= meta.settings.retries) {
    ++counters_.refused_exhausted;
    finish_without_failover(t, job, meta, c,
                            "not retried: retries exhausted (" + std::to_string(t.record.retries_used) + "/" +
                                std::to_string(meta.settings.retries) + ")",
                            now);
    return;
  }
  FailoverRecord f;
  f.job_id = job.id;
  f.submitted = key.submitted;
  f.attempt = attempt;
  f.failure_class = cls;
  f.evidence = c.evidence;
  f.bad_nodes = join_hostlist(c.bad_nodes);
  f.phase = by_slurm ? FailoverPhase::requeued : FailoverPhase::waiting;
  f.fault_time = now;
  for (const auto& nf : failure.node_faults) {
    for (const auto& rec : faults_[nf.node])
      if (rec.detail == nf.detail && rec.time <= now) f.fault_time = std::min(f.fault_time, rec.time);
  }
  if (failure.end != JobEnd::running_on_bad_node && failure.end != JobEnd::hung && !by_slurm && job.end_time)
    f.fault_time = std::min<long long>(f.fault_time, job.end_time);
  if (failure.end == JobEnd::hung && t.last_progress) f.fault_time = t.last_progress;  // when it stopped
  long long last_requeue = 0;
  for (const auto& prev : store_.failovers(key))
    if (prev.phase == FailoverPhase::done) last_requeue = std::max(last_requeue, prev.requeue_time);
  const auto& fc = config_.failover;
  f.not_before = last_requeue + failover_backoff_s(t.record.retries_used, fc.backoff_initial_s, fc.backoff_max_s);
  f.requeue_time = by_slurm ? now : 0;
  f.workspace = t.record.workspace;
  f.gpus = t.record.gpus;
  f.uses_retry = !refused;
  // Slurm revoked the job's credential on all the nodes of the refused run; safed knows only the
  // refusing one unless it saw the run, so a multi-node job waits that out as Slurm would.
  if (refused && t.running_attempt != attempt && job.num_nodes > 1)
    f.not_before = std::max(f.not_before, now + kCredentialExpiry_s);
  store_.put_failover(f);
  t.record.state = "failing_over";
  auto& open = open_[{key, attempt}] = f;
  advance(open, t, job, meta, now);
  if (open.phase == FailoverPhase::done || open.phase == FailoverPhase::refused) open_.erase({key, attempt});
}

void FailoverPlanner::finish_without_failover(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                                              const Classification& c, const std::string& note, long long now) {
  bool still_running = job.state == SlurmJobState::running;
  bool held = job.state == SlurmJobState::pending;  // Slurm requeued it itself: keep it from running again
  t.record.last_evidence = c.evidence + " (" + note + ")";
  if (!still_running && !held) {
    t.record.state = state_text(job.state);
    t.record.end_time = job.end_time ? static_cast<long long>(job.end_time) : now;
  }
  if (held) t.record.state = "held";
  log("safed: job " + std::to_string(job.id) + ": " + note);
  // Slurm refuses every change to a job that has ended (AdminComment included): its final
  // classification lives in the state store (safectl job ID). Running or held jobs get it in
  // AdminComment too.
  if (!still_running && !held) {
    store_.log_action({now, t.record.key(), "", "record", note, true});
    return;
  }
  JobMetadata m = meta;
  m.retries_used = t.record.retries_used;
  m.last_failure = c.summary() + " (" + note + ")";
  JobChange change;
  change.id = job.id;
  change.admin_comment = merge_admin_comment(job.admin_comment, format_job_metadata(m));
  if (held) change.hold = true;
  checkpoint_store();
  std::string err = slurm_.update_job(change).error();
  log_action(now, t.record.key(), "", held ? "hold" : "record", note + (err.empty() ? "" : ": " + err), err.empty());
}

// srun's step-creation error at the end of the output of an attempt that a SaFE failover started
// ("srun: error: Unable to create step for job 7: ..."). The job's output is the user's to write,
// so this is user evidence: it is shown with the classification and decides nothing.
std::optional<std::string> FailoverPlanner::output_tail_after_failover(TrackedJob& t, const SlurmJob& job) {
  bool after_failover = false;
  for (const auto& f : store_.failovers(t.record.key()))
    after_failover = after_failover || (f.phase == FailoverPhase::done && f.attempt == job.restart_count - 1);
  if (!after_failover) return std::string();
  auto text = files_.tail(output_path(job), job.user_id, 2048, t.ended_seen);
  if (text.is_pending()) return std::nullopt;
  if (!text.is_known()) return std::string();
  std::string needle = "srun: error: Unable to create step for job " + std::to_string(job.id) + ":";
  auto at = text.value.rfind(needle);
  if (at == std::string::npos) return std::string();
  auto end = text.value.find('\n', at);
  return text.value.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// Requeueing a job while one of its nodes does not answer leaves its old allocation completing
// on that node; when Slurm later sets the node DOWN it deallocates the requeued job's GRES from
// the wrong allocation (22.05: "gres/gpu: job N dealloc of node nK bad node_offset 0 count is
// 0"), and the next attempt fails in its first srun with "Invalid generic resource (gres)
// specification". So a failover first sets such a node DOWN itself (Slurm then ends the job with
// NODE_FAIL and frees the node, as for a node the probes found dead), adds it (or one Slurm
// already set DOWN) to the job's bad nodes as a node fault, and requeues only once the job holds
// none of its nodes any more.
bool FailoverPlanner::released_by_silent_nodes(FailoverRecord& f, TrackedJob& t, const SlurmJob& job,
                                               long long now) {
  // Still on its nodes: running, or winding down. Once released, only the blame is recorded.
  bool holding = job.state == SlurmJobState::running || job.completing;
  bool wait = false;
  for (const std::string& name : expand_hostlist(job.nodes.empty() ? t.attempt_nodes : job.nodes)) {
    const SlurmNode* n = node(name);
    bool unanswered = unanswered_.count(name) > 0;
    if (!n || !(n->down || unanswered)) continue;
    wait = wait || holding;
    std::string reason = n->reason;
    if (!n->state_down) {
      // Slurm's own "not responding" is one missed ping, common on a busy node: Slurm either
      // clears it or sets the node DOWN itself after SlurmdTimeout, so the requeue just waits.
      // Only safed's probes (several failures in a row) are enough to take a node out here.
      if (!unanswered || !holding) continue;
      reason = std::string(kUnreachablePrefix) + " slurmd did not answer safed's probe when job " +
               std::to_string(job.id) + " failed over";
      checkpoint_store();
      std::string err = slurm_.down_node(name, reason).error();
      log_action(now, t.record.key(), name, "node down", reason + (err.empty() ? "" : ": " + err), err.empty());
      if (!err.empty()) continue;
    }
    // Slurm's DOWN or ours: the job is kept off the node like off any other faulty one.
    std::vector<std::string> bad = expand_hostlist(f.bad_nodes);
    if (std::find(bad.begin(), bad.end(), name) != bad.end()) continue;
    bad.push_back(name);
    f.bad_nodes = join_hostlist(bad);
    f.failure_class = std::string(to_string(FailureClass::node_fault));
    f.evidence = name + ": " + (reason.empty() ? "down" : reason) + "; before: " + f.evidence;
    t.record.last_class = f.failure_class;
    t.record.last_evidence = f.evidence;
  }
  if (wait && last_deferral_[job.id] != "silent") {
    last_deferral_[job.id] = "silent";
    log("safed: job " + std::to_string(job.id) + ": requeue waits until Slurm has ended the job on its "
        "non-responding nodes and released them");
  }
  return !wait;
}

// Where the requeued job may run next: not on its bad nodes, nor on those it excluded itself.
// A node the job requires (-w/--nodelist) that failed is dropped from its required list: Slurm
// would otherwise keep the job pending for ever (BadConstraints) on a node it cannot use; the
// drop is logged and shown in the job's record. A required node that is only recent (it refuses
// the job for ~120 s, see below) is never excluded: the job waits for it instead.
FailoverPlanner::RestartPlacement FailoverPlanner::placement_for(const FailoverRecord& f, const TrackedJob& t,
                                                                 const SlurmJob& job) {
  RestartPlacement p;
  std::vector<std::string> exclude = expand_hostlist(t.record.user_exclude);
  std::set<std::string> bad;
  for (const auto& prev : store_.failovers(t.record.key()))
    for (auto& n : expand_hostlist(prev.bad_nodes)) bad.insert(n);
  for (auto& n : expand_hostlist(f.bad_nodes)) bad.insert(n);
  std::vector<std::string> required;
  for (auto& n : expand_hostlist(job.req_nodes)) {
    if (bad.count(n)) p.dropped_required.push_back(n);
    else required.push_back(n);
  }
  if (!p.dropped_required.empty()) p.required = join_hostlist(required);
  std::set<std::string> keep(required.begin(), required.end());
  for (const auto& n : bad) exclude.push_back(n);
  std::set<std::string> excluded(exclude.begin(), exclude.end());
  // The nodes the job just left are healthy but refuse it for ~120 s (its old credential): keep
  // it off them too when the rest of the cluster can hold it, else start it once that expires.
  std::vector<std::string> recent;
  for (auto& n : expand_hostlist(t.attempt_nodes.empty() ? job.nodes : t.attempt_nodes))
    if (!excluded.count(n)) recent.push_back(n);
  long long usable_elsewhere = 0;
  for (const SlurmNode& n : nodes_) {
    if (n.down || n.drain || excluded.count(n.name)) continue;
    if (std::find(recent.begin(), recent.end(), n.name) != recent.end()) continue;
    ++usable_elsewhere;
  }
  bool needs_recent = false;
  for (const auto& n : recent) needs_recent = needs_recent || keep.count(n) > 0;
  if (!needs_recent && usable_elsewhere >= std::max<long long>(1, job.num_nodes)) {
    for (auto& n : recent) exclude.push_back(n);
  } else if (!recent.empty()) {
    p.wait_credential = true;
  }
  std::vector<std::string> final_exclude;
  for (auto& n : exclude)
    if (!keep.count(n)) final_exclude.push_back(n);
  p.exclude = join_hostlist(final_exclude);
  return p;
}

void FailoverPlanner::count_attempt(TrackedJob& t, long long start, long long end, bool failed, long long checkpoint) {
  t.record.run_seconds += std::max(0LL, end - start);
  if (!failed) return;
  t.record.lost_seconds += lost_work_s(start, end, checkpoint);
}

void FailoverPlanner::settle_running_attempt(const FailoverRecord& f, TrackedJob& t, const JobMetadata& meta,
                                             long long now) {
  // An attempt failed over while it still ran (bad node, hang) ran on through the checkpoint
  // signal and its grace: it is counted once, at the requeue, with the checkpoint it left (as
  // last read: the requeue does not wait for a read).
  for (AttemptRecord a : store_.attempts(f.key())) {
    if (a.attempt != f.attempt || a.end_time != 0 || a.end_state.empty()) continue;
    a.end_time = now;
    store_.put_attempt(a);
    count_attempt(t, a.start_time, now, true, known_checkpoint_ns(t, meta, 0) / 1000000000LL);
    store_.put_job(t.record);
  }
}

void FailoverPlanner::advance(FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                              long long now) {
  std::string id = std::to_string(job.id);
  for (int step = 0; step < 6; ++step) {
    switch (f.phase) {
      case FailoverPhase::waiting: {
        if (now < f.not_before) {
          if (last_deferral_[job.id] != "backoff") {
            last_deferral_[job.id] = "backoff";
            ++counters_.deferred_backoff;
            log("safed: job " + id + ": failover waits " + std::to_string(f.not_before - now) +
                " s (backoff after earlier failovers)");
          }
          return;
        }
        bool node_fault = f.failure_class == to_string(FailureClass::node_fault);
        if (!limiter_.try_acquire(now, tenant_of(t), node_fault)) {
          if (last_deferral_[job.id] != "rate") {
            last_deferral_[job.id] = "rate";
            ++counters_.deferred_rate_limit;
            log("safed: job " + id + ": failover deferred: " +
                (node_fault ? "the cluster's limit of " + std::to_string(limiter_.limit()) + " node-fault failovers"
                            : tenant_of(t) + "'s share (" + std::to_string(limiter_.tenant_share(now)) +
                                  ") of the limit of " + std::to_string(limiter_.limit()) + " failovers") +
                " per minute is used (failover.rate_limit_per_minute)");
          }
          return;
        }
        last_deferral_.erase(job.id);
        int signo = meta.settings.ckpt_signal.signo;
        if (job.state == SlurmJobState::running && !job.completing && signo > 0) {
          checkpoint_store();
          std::string err = slurm_.signal_job(job.id, signo).error();
          log_action(now, t.record.key(), "", "checkpoint signal", "SIG" + signal_name(signo) + (err.empty() ? "" : ": " + err),
                     err.empty());
          f.signal_time = now;
          t.signal_sent_ns = wall_ns_();
          f.phase = err.empty() ? FailoverPhase::signalled : FailoverPhase::requeueing;
        } else {
          f.phase = FailoverPhase::requeueing;
        }
        store_.put_failover(f);
        break;
      }
      case FailoverPhase::signalled: {
        int grace = meta.settings.ckpt_signal.seconds.value_or(config_.checkpoint.grace_s);
        bool left = job.state != SlurmJobState::running || job.completing;
        // A checkpoint the job finished after the signal: newer than the signal to the
        // nanosecond (whole seconds cannot tell it from a periodic one just before it). After a
        // restart of safed only the signal's second is known: then only a later second counts.
        long long fresh = now - std::max(2, 2 * config_.controller.poll_interval_ms / 1000);
        long long after_ns = t.signal_sent_ns ? t.signal_sent_ns : (f.signal_time + 1) * 1000000000LL - 1;
        bool checkpointed = !meta.settings.ckpt_dir.empty() && known_checkpoint_ns(t, meta, fresh) > after_ns;
        if (!left && !checkpointed && now < f.signal_time + grace) return;
        log("safed: job " + id + ": " +
            (checkpointed ? "new checkpoint complete" : left ? "job stopped" : "grace of " + std::to_string(grace) + " s over") +
            "; requeueing");
        f.phase = FailoverPhase::requeueing;
        store_.put_failover(f);
        break;
      }
      case FailoverPhase::requeueing: {
        if (job.restart_count > f.attempt) {  // Slurm has requeued it (perhaps before a restart of safed)
          settle_running_attempt(f, t, meta, now);
          if (!f.requeue_time) f.requeue_time = now;
          f.phase = FailoverPhase::requeued;
          store_.put_failover(f);
          break;
        }
        if (!released_by_silent_nodes(f, t, job, now)) {
          store_.put_failover(f);
          return;
        }
        settle_running_attempt(f, t, meta, now);
        store_.put_failover(f);
        checkpoint_store();  // "requeueing" is on disk before Slurm acts
        std::string err = slurm_.requeue(job.id).error();
        log_action(now, t.record.key(), "", "requeue", err, err.empty());
        if (!err.empty()) return;  // tried again next pass
        f.requeue_time = now;
        f.phase = FailoverPhase::requeued;
        store_.put_failover(f);
        checkpoint_store();
        return;  // the job's new state shows in the next pass
      }
      case FailoverPhase::requeued: {
        if (job.restart_count <= f.attempt) return;  // not yet visible
        // While the old run winds down Slurm has not yet set its own requeue hold: a StartTime
        // set now would be overwritten by it.
        if (job.completing) return;
        if (ended(job.state) && !job.completing) {  // cancelled (or ended) while failing over: leave it
          f.phase = FailoverPhase::refused;
          store_.put_failover(f);
          t.record.state = state_text(job.state);
          log("safed: job " + id + " ended (" + state_text(job.state) + ") during its failover; nothing more to do");
          return;
        }
        RestartPlacement place = placement_for(f, t, job);
        long long start = std::max(now, f.not_before);
        if (place.wait_credential) start = std::max(start, (f.requeue_time ? f.requeue_time : now) + kCredentialExpiry_s);
        std::string dropped = join_hostlist(place.dropped_required);
        JobMetadata m = meta;
        m.retries_used = t.record.retries_used + (f.uses_retry ? 1 : 0);
        m.last_failure = f.failure_class + " " + f.evidence +
                         (dropped.empty() ? "" : "; " + dropped + " dropped from the required nodes");
        JobChange change;
        change.id = job.id;
        change.exc_nodes = place.exclude;
        change.req_nodes = place.required;
        change.start_time = start;
        change.admin_comment = merge_admin_comment(job.admin_comment, format_job_metadata(m));
        checkpoint_store();
        std::string err = slurm_.update_job(change).error();
        log_action(now, t.record.key(), "", "restart",
                   "ExcNodeList=" + place.exclude +
                       (place.required ? " ReqNodeList=" + *place.required + " (" + dropped + " failed)" : "") +
                       " StartTime=" + (start <= now ? "now" : "+" + std::to_string(start - now) + "s") +
                       " retries=" + std::to_string(m.retries_used) + "/" + std::to_string(meta.settings.retries) +
                       (err.empty() ? "" : ": " + err),
                   err.empty());
        if (!err.empty()) return;
        f.phase = FailoverPhase::done;
        store_.put_failover(f);
        t.expected_start = start;
        t.record.retries_used = m.retries_used;
        t.record.state = "requeued";
        ++counters_.failovers_by_class[f.failure_class];
        return;
      }
      case FailoverPhase::done:
      case FailoverPhase::refused:
        return;
    }
  }
}

}  // namespace safe
