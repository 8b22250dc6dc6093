// From the end of a job's attempt to its failover: what safed reads about the attempt (node
// faults, the epilog's and prolog's evidence, the output's tail, the newest checkpoint), its
// classification, and a failover started or refused. The failover's phases are driven by
// failover_executor.cpp.
#include <algorithm>

#include "common/hostlist.hpp"
#include "controller/safed/failover_planner.hpp"
#include "controller/safed/lost_work.hpp"

namespace safe {
namespace {

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

ExitStatus job_exit(const SlurmJob& job) {
  ExitStatus e = decode_wait_status(job.exit_code);
  if (e.code == 0 && e.signal == 0) e = decode_wait_status(job.derived_ec);
  return e;
}

}  // namespace

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
  if (!evidence.is_known())
    log("safed: job " + std::to_string(job.id) + ": epilog evidence unreadable: " + evidence.why, LogPriority::warning);
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

long long FailoverPlanner::known_checkpoint_ns(const TrackedJob& t, const JobMetadata& meta, long long since,
                                               long long want_since) {
  if (meta.settings.ckpt_dir.empty()) return 0;
  auto ck = files_.newest_checkpoint_ns(meta.settings.ckpt_dir, config_.checkpoint.complete_marker, t.record.user_id,
                                        since, want_since);
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
    auto ck = files_.newest_checkpoint_ns(dir, config_.checkpoint.complete_marker, t.record.user_id, t.ended_seen,
                                          t.ended_seen);
    if (ck.is_pending()) ready = false;
    checkpoint = ck.is_known() ? ck.value / 1000000000LL : 0;
  }
  return ready;
}

// Classifies what the job's state shows about an attempt (attempt_event) and starts its failover.
void FailoverPlanner::observe_attempt(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now) {
  switch (attempt_event(job, t.classified_attempt)) {
    case AttemptEvent::none: return;
    case AttemptEvent::running: return observe_running(t, job, meta, now);
    case AttemptEvent::previous_ended: return observe_previous_end(t, job, meta, now);
    case AttemptEvent::ended: return observe_end(t, job, meta, now);
  }
}

// The current run: on a node that turned bad, or hung.
void FailoverPlanner::observe_running(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now) {
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
    if (t.record.state != SafeJobState::failing_over) check_grow_back(t, job, meta, now);
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
}

// Pending again after a requeue safed did not make: the prolog refused the run, or Slurm
// requeued it on its own (a node died under a --requeue job).
void FailoverPlanner::observe_previous_end(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now) {
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
}

// The run ended: completed, or failed (and perhaps failed over).
void FailoverPlanner::observe_end(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now) {
  note_ended(t, job.restart_count, now);
  if (job.state == SlurmJobState::complete) {
    t.classified_attempt = job.restart_count;
    store_.put_attempt({job.id, t.record.submitted, job.restart_count, job.nodes, job.start_time, job.end_time,
                        "COMPLETED", "", "", ""});
    t.record.state = SafeJobState::completed;
    t.record.end_time = job.end_time;
    count_attempt(t, job.start_time, job.end_time, false, 0);
    files_.forget_evidence(job.id, job.nodes);
    return;
  }
  JobFailure failure;
  failure.end = job_end(job.state);
  ExitStatus e = job_exit(job);
  failure.exit_code = e.code;
  failure.signal = e.signal;
  long long checkpoint = 0;
  if (!reads_for_ended_run(t, job, now, failure, checkpoint)) return;  // decided once they are read
  count_attempt(t, job.start_time, job.end_time, true, checkpoint);
  start_failover(t, job, meta, failure, now);
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
  // Slurm's end time only when it has passed: a job pending again (its run refused by the prolog,
  // or requeued by Slurm) carries a projected end, not its last run's (22.05: 136 years ahead).
  long long end_time = failure.end == JobEnd::running_on_bad_node || failure.end == JobEnd::hung ? 0
                       : job.end_time > 0 && static_cast<long long>(job.end_time) <= now
                           ? static_cast<long long>(job.end_time)
                           : now;
  const JobKey key = t.record.key();
  store_.put_attempt({job.id, key.submitted, attempt, nodes, t.attempt_start ? t.attempt_start : job.start_time,
                      end_time, std::string(to_string(failure.end)), cls, c.rule, c.evidence});
  // What the prolog and epilog recorded about an attempt that ended is read: it may go.
  if (end_time) files_.forget_evidence(job.id, nodes);
  t.record.last_class = cls;
  t.record.last_evidence = c.evidence;
  log("safed: job " + std::to_string(job.id) + " attempt " + std::to_string(attempt + 1) + ": " + c.summary() + " (" +
      c.rule + ")");

  switch (decide_after_failure(by_slurm, refused, job.expedited_requeue, is_retried(c.failure_class, config_.failover),
                               t.record.retries_used, meta.settings.retries)) {
    case AfterFailure::leave_to_owner:
      t.record.state = SafeJobState::pending;
      return;
    case AfterFailure::not_retried:
      finish_without_failover(t, job, meta, c, "not retried: " + cls + " is not in failover.retry_classes", now);
      return;
    case AfterFailure::retries_exhausted:
      ++counters_.refused_exhausted;
      finish_without_failover(t, job, meta, c,
                              "not retried: retries exhausted (" + std::to_string(t.record.retries_used) + "/" +
                                  std::to_string(meta.settings.retries) + ")",
                              now);
      return;
    case AfterFailure::fail_over:
      break;
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
  // The node's fault during this run: an earlier one reads the same when it had the same cause
  // (safed's reason for a dead slurmd names its address), so only those since the run started
  // count. A run the prolog refused is dated by safed (when it saw the refusal): no bound.
  long long run_start = refused ? 0 : (t.attempt_start ? t.attempt_start : static_cast<long long>(job.start_time));
  if (run_start > now) run_start = 0;  // a StartTime Slurm set for the next run: this one's is unknown
  for (const auto& nf : failure.node_faults) {
    for (const auto& rec : faults_[nf.node])
      if (rec.detail == nf.detail && rec.time <= now && rec.time >= run_start)
        f.fault_time = std::min(f.fault_time, rec.time);
  }
  if (failure.end != JobEnd::running_on_bad_node && failure.end != JobEnd::hung && !by_slurm && job.end_time)
    f.fault_time = std::min<long long>(f.fault_time, job.end_time);
  if (failure.end == JobEnd::hung && t.last_progress) f.fault_time = t.last_progress;  // when it stopped
  long long last_requeue = 0;
  for (const auto& prev : store_.failovers(key))
    if (prev.phase == FailoverPhase::done) last_requeue = std::max(last_requeue, prev.requeue_time);
  // A requeue "after now" was made before the clock stepped back: the backoff counts from now.
  last_requeue = std::min(last_requeue, now);
  const auto& fc = config_.failover;
  f.not_before = last_requeue + failover_backoff_s(t.record.retries_used, fc.backoff_initial_s, fc.backoff_max_s);
  f.requeue_time = by_slurm ? now : 0;
  f.workspace = t.record.workspace;
  f.gpus = t.record.gpus;
  f.uses_retry = !refused;
  // Slurm revoked the job's credential on all the nodes of the refused run; safed knows only the
  // refusing one unless it saw the run, so a multi-node job may start again only after the
  // revocation's second (kRevokeMargin_s).
  if (refused && t.running_attempt != attempt && job.num_nodes > 1)
    f.not_before = std::max(f.not_before, now + kRevokeMargin_s);
  store_.put_failover(f);
  t.record.state = SafeJobState::failing_over;
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
    t.record.state = safe_job_state(job.state);
    t.record.end_time = job.end_time ? static_cast<long long>(job.end_time) : now;
  }
  if (held) t.record.state = SafeJobState::held;
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
  Status updated = slurm_.update_job(change);
  log_action(now, t.record.key(), "", held ? "hold" : "record", note + (updated ? "" : ": " + updated.error()),
             updated.ok());
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

void FailoverPlanner::count_attempt(TrackedJob& t, long long start, long long end, bool failed, long long checkpoint) {
  t.record.run_seconds += std::max(0LL, end - start);
  if (!failed) return;
  t.record.lost_seconds += lost_work_s(start, end, checkpoint);
}

}  // namespace safe
