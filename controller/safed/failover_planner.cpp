#include "controller/safed/failover_planner.hpp"

#include <algorithm>
#include <utility>

#include "common/job_metadata.hpp"

namespace safe {

namespace {

// When a failover took its slot of the rate limit (it leaves `waiting` only with one), or 0 if it
// never did. Only a requeue or a checkpoint signal records a time; a failover still in
// `requeueing` without either (Slurm refused the requeue, or it waits for silent nodes) took its
// slot no earlier than its backoff ended.
long long rate_limit_slot_time(const FailoverRecord& f) {
  if (f.phase == FailoverPhase::waiting || f.phase == FailoverPhase::refused) return 0;
  if (f.requeue_time) return f.requeue_time;
  if (f.signal_time) return f.signal_time;
  return f.phase == FailoverPhase::done ? 0 : std::max(f.fault_time, f.not_before);
}

}  // namespace

FailoverPlanner::FailoverPlanner(SafeConfig config, SlurmActions& slurm, StateStore& store, JobFiles& files,
                                 OutputPatternDialect dialect)
    : config_(std::move(config)), slurm_(slurm), dialect_(dialect), store_(store), files_(files),
      limiter_(config_.failover.rate_limit_per_minute) {
  // A failed pass or a restart makes a new planner: the failovers still open keep their slots of
  // the rate limit too (counting only finished ones let a flood have the minute's limit twice).
  for (const auto& f : store_.all_failovers()) {
    if (long long slot = rate_limit_slot_time(f)) {
      TrackedJob owner;
      if (auto j = store_.job(f.key())) owner.record = *j;
      limiter_.record(slot, tenant_of(owner), f.failure_class == to_string(FailureClass::node_fault));
    }
    if (f.phase != FailoverPhase::done && f.phase != FailoverPhase::refused) open_[{f.key(), f.attempt}] = f;
    if (f.phase == FailoverPhase::done) {
      ++counters_.failovers_by_class[f.failure_class];
      if (f.running_again_time && f.failure_class != kGrowBackClass) {
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

std::vector<LogEntry> FailoverPlanner::take_log() { return std::exchange(log_, {}); }

void FailoverPlanner::log(std::string line, LogPriority priority) { log_.push_back({priority, std::move(line)}); }

void FailoverPlanner::checkpoint_store() {
  store_.commit();
  store_.begin();
}

void FailoverPlanner::log_action(long long now, const JobKey& job, const std::string& node, const std::string& action,
                                 const std::string& detail, bool ok) {
  store_.log_action({now, job, node, action, detail, ok});
  std::string who = job.id ? "job " + std::to_string(job.id) : "node " + node;
  log("safed: " + who + ": " + action + (ok ? "" : " FAILED") + (detail.empty() ? "" : ": " + detail),
      ok ? LogPriority::notice : LogPriority::warning);
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
  return batch_output_path(job.std_out, c, dialect_);
}

void FailoverPlanner::reconcile(const std::vector<SlurmJob>& jobs, const std::vector<SlurmNode>& nodes, long long now) {
  store_.begin();
  try {
    observe_nodes(nodes, now);
    ++pass_;
    grow_promises_.clear();
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
    serve_spare_requests(jobs, now);
    maintain_spare_pools(jobs, now);
    resize_waiting_jobs(jobs, now);
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
      log("safed: job " + std::to_string(it->first.first.id) + " left Slurm during its failover; given up",
          LogPriority::warning);
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

void FailoverPlanner::shift_clock(long long delta) {
  auto move = [delta](long long& time) {
    if (time) time += delta;
  };
  for (auto& [id, t] : jobs_) {
    move(t.last_progress);
    move(t.bad_node_seen);  // these two bound reads' times, which are on the new clock from now
    move(t.ended_seen);
    // Not signal_sent_ns: it is compared with checkpoints' mtimes, which are on the clock they were
    // written by. Left alone, a step back only hides a checkpoint the job finishes after it (the
    // grace period runs out in full); moved back, every checkpoint of the hour before the signal
    // would pass for the one it asked for.
  }
  limiter_.shift_clock(delta);
  store_.begin();
  for (auto& [key, f] : open_) {
    move(f.fault_time);  // the MTTR stays the time it really took
    move(f.signal_time);
    move(f.requeue_time);
    move(f.not_before);
    store_.put_failover(f);
  }
  store_.commit();
}

void FailoverPlanner::finish_gone(TrackedJob& t, long long now) {
  if (t.record.end_time == 0 && t.seen) {
    t.record.end_time = now;
    if (t.record.state == SafeJobState::running || t.record.state == SafeJobState::pending)
      t.record.state = SafeJobState::gone;
    store_.put_job(t.record);
  }
  std::string nodes;
  for (const auto& a : store_.attempts(t.record.key()))
    if (!a.nodes.empty()) nodes += (nodes.empty() ? "" : ",") + a.nodes;
  files_.forget_evidence(t.record.job_id, nodes);
  last_deferral_.erase(t.record.job_id);
  asked_nodes_.erase(t.record.job_id);  // a job cancelled while it waited: nothing more to resize
}

void FailoverPlanner::observe_job(const SlurmJob& job, const JobMetadata& meta, long long now) {
  TrackedJob& t = jobs_[job.id];
  if (!t.seen) adopt(t, job, meta);
  if (job.state == SlurmJobState::running && !job.completing) {
    if (t.partition != job.partition) t.partition = job.partition;
    t.node_range = job.max_nodes > job.num_nodes;
    t.required_nodes = !job.req_nodes.empty();
  }
  const JobRecord before = t.record;
  t.record.max_retries = meta.settings.retries;
  t.record.retries_used = std::max(t.record.retries_used, meta.retries_used);
  // A pending job's StartTime is only Slurm's estimate.
  if (!t.first_start && job.start_time && (job.state == SlurmJobState::running || ended(job.state)))
    t.first_start = job.start_time;
  note_run(t, job, now);
  if (!ended(job.state) && t.record.end_time == 0 && t.record.state != SafeJobState::failing_over &&
      !(t.record.state == SafeJobState::held && job.state == SlurmJobState::pending))
    t.record.state = safe_job_state(job.state);
  keep_restart(t, job, now);
  // A failover in progress for this job goes on first; the job's attempts are classified again
  // only once none is open.
  if (!advance_open_failovers(t, job, meta, now)) observe_attempt(t, job, meta, now);
  if (t.record != before || !before.updated) {
    t.record.updated = now;
    store_.put_job(t.record);
  }
}

// The job as safed first sees it in this run: its record from the store (after a restart of
// safed), or a new one.
void FailoverPlanner::adopt(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta) {
  t.seen = true;
  // Slurm's SubmitTime moves at every requeue: the submission time admission recorded does not.
  JobKey key{job.id, meta.submitted};
  if (auto r = store_.job(key)) {
    t.record = *r;
    t.record.user_id = job.user_id;  // a store from before user ids has 0
    for (const auto& a : store_.attempts(key)) {
      if (!a.end_state.empty()) t.classified_attempt = std::max(t.classified_attempt, a.attempt);
      if (a.start_time && (!t.first_start || a.start_time < t.first_start)) t.first_start = a.start_time;
      if (a.attempt >= t.running_attempt) {
        t.running_attempt = a.attempt;
        t.attempt_nodes = a.nodes;
        t.attempt_start = a.start_time;
      }
    }
    return;
  }
  t.record.job_id = job.id;
  t.record.submitted = key.submitted;
  t.record.submit_time = meta.submitted ? meta.submitted : static_cast<long long>(job.submit_time);
  t.record.user_id = job.user_id;
  t.record.name = job.name;
  t.record.workspace = meta.settings.workspace;
  t.record.gpus = meta.settings.gpus;
  t.record.user_exclude = job.exc_nodes;
  t.record.state = safe_job_state(job.state);
}

// A new run of the job: a new attempt, and the end of the failover that restarted it (the MTTR
// sample). Right after a requeue Slurm still reports the old run as RUNNING (with the REQUEUE
// flag) and the new restart count: only a run without it is a new attempt.
void FailoverPlanner::note_run(TrackedJob& t, const SlurmJob& job, long long now) {
  if (job.state != SlurmJobState::running || job.completing || job.restart_count == t.running_attempt) return;
  const JobKey key = t.record.key();
  t.running_attempt = job.restart_count;
  t.attempt_nodes = job.nodes;
  t.attempt_start = job.start_time;
  t.output_size = -1;
  t.heartbeat_mtime = 0;
  t.last_progress = now;
  t.no_progress_signal = false;
  store_.put_attempt({job.id, key.submitted, job.restart_count, job.nodes, job.start_time, 0, "", "", "", ""});
  for (auto& f : job.restart_count > 0 ? store_.failovers(key) : std::vector<FailoverRecord>{}) {
    if (f.phase != FailoverPhase::done || f.running_again_time || f.attempt >= job.restart_count) continue;
    note_running_again(f, job, now);
  }
}

void FailoverPlanner::note_running_again(FailoverRecord& f, const SlurmJob& job, long long now) {
  f.running_again_time = now;
  store_.put_failover(f);
  asked_nodes_.erase(job.id);
  // A grow back is planned: its time is in the job's run times (ETTR), not in the MTTR of faults.
  if (f.failure_class == kGrowBackClass) {
    log("safed: job " + std::to_string(job.id) + " runs again on " + job.nodes + " (" + std::to_string(job.num_nodes) +
        " nodes), " + std::to_string(now - f.fault_time) + " s after its grow back began");
    return;
  }
  double lost = static_cast<double>(now - f.fault_time);
  counters_.mttr_samples.push_back(lost);
  counters_.time_lost_by_workspace[f.workspace] += lost;
  log("safed: job " + std::to_string(job.id) + " runs again on " + job.nodes + ", " +
      std::to_string(now - f.fault_time) + " s after the fault");
}

// Until the run after a failover starts, Slurm may undo what safed did. slurmctld, killed before
// it saved them, comes back without the requeue (the old run going on, or ended as before, its
// restart uncounted): the failover is open again from its requeue, with the same checks as the
// first time (a node that stopped answering is set DOWN and released first). Or it comes back
// without the update (SaFE's record in AdminComment as before it: only administrators and SaFE
// write it): the update is made again. Or Slurm puts its requeue hold back (StartTime moved on):
// lifted once, as the update did.
void FailoverPlanner::keep_restart(TrackedJob& t, const SlurmJob& job, long long now) {
  if (!t.restart_change) return;
  if (job.restart_count > t.requeued_attempt && (job.state == SlurmJobState::running || ended(job.state))) {
    t.restart_change.reset();  // the next run started
    t.expected_start = 0;
    return;
  }
  if (job.completing) return;
  if (job.restart_count == t.requeued_attempt) {
    if (job.state == SlurmJobState::running || (ended(job.state) && job.state != SlurmJobState::cancelled))
      reopen_failover(t, job);
    t.restart_change.reset();
    return;
  }
  if (job.state != SlurmJobState::pending || job.restart_count != t.requeued_attempt + 1) return;
  auto want = t.restart_change->admin_comment ? parse_job_metadata(*t.restart_change->admin_comment) : std::nullopt;
  auto have = parse_job_metadata(job.admin_comment);
  bool update_lost = want && (!have || have->retries_used != want->retries_used ||
                              have->last_failure != want->last_failure);
  bool held = t.expected_start && job.start_time > std::max(now, t.expected_start) + 5;
  if (!update_lost && !held) return;
  JobChange change = update_lost ? *t.restart_change : JobChange{};
  change.id = job.id;
  change.start_time = std::max(now, t.expected_start);
  Status updated = slurm_.update_job(change);
  log_action(now, t.record.key(), "", "start again",
             std::string(update_lost ? "slurmctld lost the restart's update" : "Slurm re-held the job") +
                 (updated ? "" : ": " + updated.error()),
             updated.ok());
  if (updated) t.expected_start = 0;
}

void FailoverPlanner::reopen_failover(TrackedJob& t, const SlurmJob& job) {
  auto f = store_.failover(t.record.key(), t.requeued_attempt);
  if (!f) return;
  log("safed: job " + std::to_string(job.id) + ": " + lost_requeue_text(job), LogPriority::warning);
  f->phase = FailoverPhase::requeueing;
  store_.put_failover(*f);
  open_[{t.record.key(), f->attempt}] = *f;
  t.reopened_attempt = f->attempt;
  t.record.state = SafeJobState::failing_over;
}

// True while a failover of the job is still open after this pass.
bool FailoverPlanner::advance_open_failovers(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                                             long long now) {
  const JobKey key = t.record.key();
  for (auto it = open_.empty() ? open_.end() : open_.lower_bound({key, -1});
       it != open_.end() && it->first.first == key;) {
    FailoverRecord& f = it->second;
    advance(f, t, job, meta, now);
    if (f.phase == FailoverPhase::done || f.phase == FailoverPhase::refused) it = open_.erase(it);
    else ++it;
  }
  auto next_open = open_.lower_bound({key, -1});
  return next_open != open_.end() && next_open->first.first == key;
}

}  // namespace safe
