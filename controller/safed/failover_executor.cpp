// The executor of failovers: for an open failover it gathers what its phase decides on, asks the
// pure decision (failover_decisions.hpp), performs the step against Slurm and moves the phase on only
// when that succeeded. Each phase is in the store before Slurm acts on it, so a crash between
// the two repeats a step at most: never a requeue (that is keyed by the job's restart count).
#include <algorithm>
#include <set>

#include "common/hostlist.hpp"
#include "common/signal_name.hpp"
#include "common/spare_reservation.hpp"
#include "controller/safed/failover_planner.hpp"
#include "controller/safed/lost_work.hpp"

namespace safe {

void FailoverPlanner::defer(std::uint32_t job_id, Deferral why, const std::string& message) {
  auto& last = last_deferral_[job_id];
  if (last == why) return;
  last = why;
  if (why == Deferral::backoff) ++counters_.deferred_backoff;
  if (why == Deferral::rate_limit) ++counters_.deferred_rate_limit;
  log("safed: job " + std::to_string(job_id) + ": " + message);
}

void FailoverPlanner::settle_running_attempt(const FailoverRecord& f, TrackedJob& t, const JobMetadata& meta,
                                             long long end) {
  // An attempt failed over while it still ran (bad node, hang) ran on through the checkpoint
  // signal and its grace: it is counted once, at the requeue, with the checkpoint it left (as
  // last read: the requeue does not wait for a read).
  for (AttemptRecord a : store_.attempts(f.key())) {
    if (a.attempt != f.attempt || a.end_time != 0 || a.end_state.empty()) continue;
    a.end_time = end;
    store_.put_attempt(a);
    count_attempt(t, a.start_time, end, true, known_checkpoint_ns(t, meta, 0, 0) / 1000000000LL);
    store_.put_job(t.record);
  }
}

std::vector<RunNode> FailoverPlanner::run_nodes(const TrackedJob& t, const SlurmJob& job) const {
  std::vector<RunNode> out;
  for (const std::string& name : expand_hostlist(job.nodes.empty() ? t.attempt_nodes : job.nodes)) {
    const SlurmNode* n = node(name);
    if (!n) continue;
    out.push_back({name, n->down, n->state_down, unanswered_.count(name) > 0, n->reason});
  }
  return out;
}

RestartPlacement FailoverPlanner::placement_for(const FailoverRecord& f, const TrackedJob& t, const SlurmJob& job) {
  RestartInputs in;
  in.user_exclude = t.record.user_exclude;
  // A grow back is for the nodes that came back: earlier failures' nodes are kept off only while
  // they are still out of service (an exclusion would keep the job from the repaired ones).
  bool grow_back = f.failure_class == kGrowBackClass;
  for (const auto& prev : store_.failovers(t.record.key()))
    for (auto& n : expand_hostlist(prev.bad_nodes)) {
      const SlurmNode* state = node(n);
      if (!grow_back || !state || state->down || state->drain) in.bad.insert(n);
    }
  for (auto& n : expand_hostlist(f.bad_nodes)) in.bad.insert(n);
  in.required = job.req_nodes;
  in.left = t.attempt_nodes.empty() ? job.nodes : t.attempt_nodes;
  // An elastic job is placed for its full size, what its restart asks for when it can.
  in.num_nodes = std::max<std::uint32_t>(job.num_nodes, t.meta.settings.min_nodes > 0 ? t.meta.settings.full_nodes : 0);
  return place_restart(in, nodes_);
}

void FailoverPlanner::advance(FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                              long long now) {
  std::string id = std::to_string(job.id);
  // Each pass of the loop moves the failover one phase on; it stops at the first step that waits.
  for (int phases = 0; phases < 6; ++phases) {
    bool before_requeue = f.phase == FailoverPhase::waiting || f.phase == FailoverPhase::signalled ||
                          f.phase == FailoverPhase::requeueing;
    if (before_requeue && grow_back_called_off(f, t, job)) return;
    switch (f.phase) {
      case FailoverPhase::waiting: {
        FailoverStep s = decide_waiting(f, job, meta.settings.ckpt_signal.signo, now);
        if (s.kind == FailoverStep::Kind::ended) return end_failover(f, t, job, meta, now);
        if (s.kind == FailoverStep::Kind::wait) {
          defer(job.id, s.deferral,
                "failover waits " + std::to_string(f.not_before - now) + " s (backoff after earlier failovers)");
          return;
        }
        bool node_fault = f.failure_class == to_string(FailureClass::node_fault);
        if (!limiter_.try_acquire(now, tenant_of(t), node_fault)) {
          defer(job.id, Deferral::rate_limit,
                "failover deferred: " +
                    (node_fault ? "the cluster's limit of " + std::to_string(limiter_.limit()) + " node-fault failovers"
                                : tenant_of(t) + "'s share (" + std::to_string(limiter_.tenant_share(now)) +
                                      ") of the limit of " + std::to_string(limiter_.limit()) + " failovers") +
                    " per minute is used (failover.rate_limit_per_minute)");
          return;
        }
        last_deferral_.erase(job.id);
        f.phase = FailoverPhase::requeueing;
        if (s.signal > 0) {
          checkpoint_store();
          Status sent = slurm_.signal_job(job.id, s.signal);
          log_action(now, t.record.key(), "", "checkpoint signal",
                     "SIG" + signal_name(s.signal) + (sent ? "" : ": " + sent.error()), sent.ok());
          f.signal_time = now;
          t.signal_sent_ns = wall_ns_();
          if (sent) f.phase = FailoverPhase::signalled;  // else no checkpoint is coming: requeue
        }
        store_.put_failover(f);
        break;
      }
      case FailoverPhase::signalled: {
        int grace = meta.settings.ckpt_signal.seconds.value_or(config_.checkpoint.grace_s);
        // A checkpoint the job finished after the signal: newer than the signal to the
        // nanosecond (whole seconds cannot tell it from a periodic one just before it). After a
        // restart of safed only the signal's second is known: then only a later second counts.
        // Only a read that started after the signal's second surely saw that checkpoint: from the
        // next second on, one is asked for at once, not when the freshness window has passed (in
        // CI the checkpoint went unseen for 4 s, and the stalled job's wait counted as lost work).
        long long fresh = now - std::max(2, 2 * config_.controller.poll_interval_ms / 1000);
        long long want = std::max(fresh, std::min(now, f.signal_time + 1));
        long long after_ns = t.signal_sent_ns ? t.signal_sent_ns : (f.signal_time + 1) * 1000000000LL - 1;
        bool checkpointed = !meta.settings.ckpt_dir.empty() && known_checkpoint_ns(t, meta, fresh, want) > after_ns;
        FailoverStep s = decide_signalled(f, job, grace, checkpointed, now);
        if (s.kind == FailoverStep::Kind::ended) return end_failover(f, t, job, meta, now);
        if (s.kind == FailoverStep::Kind::wait) return;
        log("safed: job " + id + ": " + s.why + "; requeueing");
        f.phase = FailoverPhase::requeueing;
        store_.put_failover(f);
        break;
      }
      case FailoverPhase::requeueing: {
        FailoverStep s = decide_requeueing(f, job, run_nodes(t, job));
        if (s.kind == FailoverStep::Kind::ended) return end_failover(f, t, job, meta, now);
        // Before Slurm frees them, the job's healthy nodes go into its partition's spare
        // reservation: no queued job takes them while the job waits for its restart.
        hold_survivors(f, t, job, now);
        if (s.kind == FailoverStep::Kind::requeued_by_slurm) {
          settle_running_attempt(f, t, meta, now);
          // Seen now: Slurm revoked the run's credential before (kRevokeMargin_s counts from
          // here). A time from an earlier requeue that slurmctld lost is not this one's.
          if (!f.requeue_time) f.requeue_time = now;
          f.phase = FailoverPhase::requeued;
          store_.put_failover(f);
          break;
        }
        for (const SilentNode& n : s.silent) {
          if (n.set_down) {
            checkpoint_store();
            Status downed = slurm_.down_node(n.name, n.reason);
            log_action(now, t.record.key(), n.name, "node down", n.reason + (downed ? "" : ": " + downed.error()),
                       downed.ok());
            if (!downed) continue;
          }
          // Slurm's DOWN or ours: the job is kept off the node like off any other faulty one.
          if (!blame_node(f, n.name, n.reason)) continue;
          t.record.last_class = f.failure_class;
          t.record.last_evidence = f.evidence;
        }
        if (s.hold) {
          store_.put_failover(f);
          defer(job.id, Deferral::silent_nodes,
                "requeue waits until Slurm has ended the job on its non-responding nodes and released them");
          return;
        }
        if (!fence_superseded_run(f, t, job, meta, now)) return;
        settle_running_attempt(f, t, meta, now);
        store_.put_failover(f);
        checkpoint_store();  // "requeueing" is on disk before Slurm acts
        Status requeued = slurm_.requeue(job.id);
        log_action(now, t.record.key(), "", "requeue", requeued.error(), requeued.ok());
        if (!requeued) return;  // tried again next pass
        // Dated when slurmctld has answered, not at the pass's start: it stamped the revocation
        // while it took the requeue, perhaps seconds into a long pass.
        long long answered_ns = wall_ns_();
        long long answered_s = answered_ns / 1000000000LL - (answered_ns % 1000000000LL < 0 ? 1 : 0);  // floor
        f.requeue_time = std::max(now, answered_s);
        f.phase = FailoverPhase::requeued;
        store_.put_failover(f);
        checkpoint_store();
        return;  // the job's new state shows in the next pass
      }
      case FailoverPhase::requeued: {
        bool visible = job.restart_count > f.attempt && !job.completing;
        // The fence goes out while the requeued run winds down (it is written on a worker, over a
        // pass or two): by the time the job may start again it is on disk, not started then.
        if (job.restart_count > f.attempt && job.completing) (void)fence_superseded_run(f, t, job, meta, now);
        FailoverStep s = decide_requeued(f, job, visible ? placement_for(f, t, job) : RestartPlacement{}, now);
        if (s.kind == FailoverStep::Kind::wait) return;
        if (s.kind == FailoverStep::Kind::requeue_lost) {
          log("safed: job " + id + ": " + lost_requeue_text(job), LogPriority::warning);
          f.phase = FailoverPhase::requeueing;
          f.requeue_time = 0;  // the next requeue (safed's or Slurm's) dates itself
          store_.put_failover(f);
          break;
        }
        if (s.kind == FailoverStep::Kind::ended) return end_failover(f, t, job, meta, now);
        // Slurm may have requeued the job itself (a node it set DOWN): the fence went out while
        // the run wound down (above) and is on disk once this returns true.
        if (!s.running_again && !fence_superseded_run(f, t, job, meta, now)) return;
        if (wait_for_spares(f, t, job, s, now)) return;  // restarted at the end of the pass
        restart(f, t, job, meta, s, now);
        return;
      }
      case FailoverPhase::done:
      case FailoverPhase::refused:
        return;
    }
  }
}

bool FailoverPlanner::fence_superseded_run(const FailoverRecord& f, TrackedJob& t, const SlurmJob& job,
                                           const JobMetadata& meta, long long now) {
  if (meta.settings.ckpt_dir.empty() || t.fenced_attempt == f.attempt) return true;
  int attempt = f.attempt + 1;  // as SAFE_ATTEMPT and the checkpoints' labels count
  auto fenced = files_.fence_attempt(meta.settings.ckpt_dir, config_.checkpoint.complete_marker, t.record.user_id,
                                     job.id, attempt);
  if (fenced.is_pending()) return false;
  t.fenced_attempt = f.attempt;
  std::string detail = "attempt " + std::to_string(attempt) + ": " +
                       (fenced.is_known() ? (fenced.value.empty() ? "none of its checkpoints counts"
                                                                  : "only its checkpoint " + fenced.value + " counts")
                                          : fenced.why + " (the next attempt's tasks fence it when they start)");
  log_action(now, t.record.key(), "", "checkpoint fence", detail, fenced.is_known());
  return true;
}

void FailoverPlanner::end_failover(FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                                   long long now) {
  // Cancelled before the requeue: the attempt that was failing over ended with the job (after the
  // requeue it was counted already).
  long long end = job.end_time > 0 && job.end_time <= now ? job.end_time : now;
  settle_running_attempt(f, t, meta, end);
  f.phase = FailoverPhase::refused;
  store_.put_failover(f);
  t.record.state = safe_job_state(job.state);
  t.record.end_time = end;
  store_.put_job(t.record);
  log("safed: job " + std::to_string(job.id) + " ended (" + std::string(to_string(t.record.state)) +
      ") during its failover; nothing more to do");
}

void FailoverPlanner::restart(FailoverRecord& f, TrackedJob& t, const SlurmJob& job, const JobMetadata& meta,
                              const FailoverStep& s, long long now) {
  const RestartPlacement& place = s.placement;
  std::string dropped = join_hostlist(place.dropped_required);
  JobMetadata m = meta;
  // A failover open again after slurmctld lost its requeue was counted the first time.
  bool again = t.reopened_attempt == f.attempt;
  m.retries_used = t.record.retries_used + (f.uses_retry && !again ? 1 : 0);
  m.last_failure = f.failure_class + " " + f.evidence +
                   (dropped.empty() ? "" : "; " + dropped + " dropped from the required nodes");
  JobChange change;
  change.id = job.id;
  if (!s.running_again) {
    change.exc_nodes = place.exclude;
    change.req_nodes = place.required;
    change.start_time = s.start;
    change.reservation = place.reservation;
    // Started on spares before and requeued since: back in the queue as any job.
    if (!change.reservation && !named_spare_reservation(job.reservation).empty()) change.reservation = "";
    // Restarted through the queue (its backoff, no spare for it): its held nodes go back too.
    if (!change.reservation || change.reservation->empty()) spare_claims_.erase(job.id);
  }
  // An elastic job's node count (0: none to set): through the queue, what the free nodes allow;
  // onto its held nodes and spares, as many as it was given.
  std::uint32_t size = 0;
  if (!s.running_again && (!change.reservation || change.reservation->empty()))
    size = elastic_restart_size(f, t, job, place.exclude, now).value_or(0);
  else if (!s.running_again && t.meta.settings.min_nodes > 0)
    size = place.spare_nodes;
  change.admin_comment = merge_admin_comment(job.admin_comment, format_job_metadata(m));
  checkpoint_store();
  // The size first, in an update of its own: the update below lets Slurm start the job
  // (StartTime=now), and a running job's node count cannot change; one Slurm refuses does not
  // hold up the rest of the restart (a waiting job is asked again, resize_waiting_jobs).
  if (size) {
    JobChange resize;
    resize.id = job.id;
    resize.num_nodes = size;
    Status resized = slurm_.update_job(resize);
    log_action(now, t.record.key(), "", "size",
               "NumNodes=" + std::to_string(size) + " of " + std::to_string(meta.settings.full_nodes) +
                   (resized ? "" : ": " + resized.error()),
               resized.ok());
    asked_nodes_[job.id] = resized ? size : 0;  // 0: unknown, the next pass asks again
    if (!resized) size = 0;
  }
  Status updated = slurm_.update_job(change);
  std::string what = s.running_again
                         ? std::string("Slurm already started it again on ") + job.nodes
                         : "ExcNodeList=" + place.exclude +
                               (place.required ? " ReqNodeList=" + *place.required + " (" + dropped + " failed)" : "") +
                               " StartTime=" + (s.start <= now ? "now" : "+" + std::to_string(s.start - now) + "s") +
                               (place.bad_not_excluded.empty()
                                    ? ""
                                    : " (" + join_hostlist(place.bad_not_excluded) +
                                          " not excluded: the rest of the cluster cannot hold the job)") +
                               (change.reservation ? " Reservation=" + *change.reservation : "");
  log_action(now, t.record.key(), "", "restart",
             what + " retries=" + std::to_string(m.retries_used) + "/" + std::to_string(meta.settings.retries) +
                 (updated ? "" : ": " + updated.error()),
             updated.ok());
  if (!updated) return;  // tried again next pass
  if (size) {
    change.num_nodes = size;  // replayed with the rest if slurmctld loses the update (keep_restart)
    if (static_cast<int>(size) < meta.settings.full_nodes) ++counters_.elastic_shrinks;
  }
  f.phase = FailoverPhase::done;
  store_.put_failover(f);
  // A run Slurm started before this pass was already seen by note_run (with the failover open):
  // its MTTR sample is taken here.
  if (s.running_again) note_running_again(f, job, now);
  t.expected_start = s.running_again ? 0 : s.start;
  if (s.running_again) {
    t.restart_change.reset();
  } else {
    t.restart_change = change;
    t.requeued_attempt = f.attempt;
  }
  t.record.retries_used = m.retries_used;
  t.record.state = SafeJobState::requeued;
  if (!again) ++counters_.failovers_by_class[f.failure_class];
}

}  // namespace safe
