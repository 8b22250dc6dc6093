#include "controller/safed/failover_decisions.hpp"

#include <algorithm>

#include "common/failure_classification.hpp"
#include "common/hostlist.hpp"
#include "common/lemon_detection.hpp"
#include "controller/safed/slurmd_liveness.hpp"

namespace safe {
namespace {

bool has_prefix(const std::string& s, std::string_view p) { return s.compare(0, p.size(), p) == 0; }

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
  // safed's DOWN of an unreachable node stays a DOWN once Slurm let it register (DRAIN remains).
  if (n.down || (n.drain && is_unreachable_reason(n.reason))) return NodeCondition::down;
  if (n.drain && has_prefix(n.reason, kSafeDrainPrefix)) return NodeCondition::safe_drain;
  if (n.drain) return NodeCondition::admin_drain;
  return NodeCondition::ok;
}

NodeStep decide_node(const SlurmNode& n, bool quarantined, bool in_fault) {
  NodeStep s;
  NodeCondition c = node_condition(n);
  if (quarantined && c != NodeCondition::quarantined) {
    if (n.drain || n.down) s.restore_quarantine = true;
    else s.end_quarantine = true;
  }
  // Not responding alone is no fault: Slurm flags a node it has just resumed so until its next
  // ping; a dead node is DOWN soon (SlurmdTimeout, or safed's own probe) and is recorded then.
  bool faulty = c == NodeCondition::safe_drain || (c == NodeCondition::down && n.state_down);
  s.record_fault = faulty && !in_fault;
  s.in_fault = faulty || c == NodeCondition::quarantined;
  return s;
}

AfterFailure decide_after_failure(bool by_slurm, bool refused, bool expedited, bool retried, int retries_used,
                                  int max_retries) {
  if (by_slurm && expedited) return AfterFailure::leave_to_owner;
  if (!retried) return by_slurm ? AfterFailure::leave_to_owner : AfterFailure::not_retried;
  if (!refused && retries_used >= max_retries) return AfterFailure::retries_exhausted;
  return AfterFailure::fail_over;
}

bool ended(SlurmJobState s) {
  return s != SlurmJobState::pending && s != SlurmJobState::running && s != SlurmJobState::suspended &&
         s != SlurmJobState::other;
}

AttemptEvent attempt_event(const SlurmJob& job, int classified) {
  if (job.state == SlurmJobState::running && !job.completing && classified < job.restart_count)
    return AttemptEvent::running;
  if (job.state == SlurmJobState::pending && job.restart_count > 0 && classified < job.restart_count - 1)
    return AttemptEvent::previous_ended;
  if (ended(job.state) && !job.completing && classified < job.restart_count) return AttemptEvent::ended;
  return AttemptEvent::none;
}

// A node the job requires (-w/--nodelist) that failed is dropped from its required list: Slurm
// would otherwise keep the job pending for ever (BadConstraints) on a node it cannot use. A
// required node that is only recent (it refuses the job for ~120 s, see below) is never
// excluded: the job waits for it instead.
RestartPlacement place_restart(const RestartInputs& in, const std::vector<SlurmNode>& nodes) {
  RestartPlacement p;
  std::vector<std::string> exclude = expand_hostlist(in.user_exclude);
  std::vector<std::string> required;
  for (auto& n : expand_hostlist(in.required)) {
    if (in.bad.count(n)) p.dropped_required.push_back(n);
    else required.push_back(n);
  }
  if (!p.dropped_required.empty()) p.required = join_hostlist(required);
  std::set<std::string> keep(required.begin(), required.end());
  // The job's bad nodes, when the rest of the cluster can hold it. When it cannot, excluding them
  // would keep the job pending for good: a node's exclusion outlives its repair (the list only
  // grows, one node per fault, so a long job on a nearly full cluster runs out of nodes; the
  // goodput simulation found it). Slurm keeps the job off the bad nodes still drained or down,
  // and those back in service (resumed by the health checker after clean runs, or by an admin)
  // are the job's again; a node that keeps failing is quarantined as a lemon instead.
  std::set<std::string> user_excluded(exclude.begin(), exclude.end());
  long long usable_without_bad = 0;
  for (const SlurmNode& n : nodes)
    if (!n.down && !n.drain && !n.reserved && !user_excluded.count(n.name) && (!in.bad.count(n.name) || keep.count(n.name)))
      ++usable_without_bad;
  if (usable_without_bad >= std::max<long long>(1, in.num_nodes)) {
    for (const auto& n : in.bad) exclude.push_back(n);
  } else {
    for (const auto& n : in.bad) p.bad_not_excluded.push_back(n);
  }
  std::set<std::string> excluded(exclude.begin(), exclude.end());
  // The nodes the job just left are healthy but refuse it until the second of the old run's
  // revocation has passed: keep it off them too when free nodes elsewhere can hold it now, else
  // let it back on them after kRevokeMargin_s. Nodes busy with other jobs do not count: on a full
  // cluster the job would wait hours for them instead of seconds for its own. A node in no state
  // yet (UNKNOWN, just after slurmctld restarted) is not busy.
  std::vector<std::string> recent;
  for (auto& n : expand_hostlist(in.left))
    if (!excluded.count(n)) recent.push_back(n);
  std::set<std::string> recent_set(recent.begin(), recent.end());
  long long usable_elsewhere = 0;
  for (const SlurmNode& n : nodes)
    if (!n.down && !n.drain && !n.busy && !n.reserved && !excluded.count(n.name) && !recent_set.count(n.name))
      ++usable_elsewhere;
  bool needs_recent = false;
  for (const auto& n : recent) needs_recent = needs_recent || keep.count(n) > 0;
  if (!needs_recent && usable_elsewhere >= std::max<long long>(1, in.num_nodes)) {
    for (auto& n : recent) exclude.push_back(n);
  } else if (!recent.empty()) {
    p.reuses_left = true;
  }
  std::vector<std::string> final_exclude;
  for (auto& n : exclude)
    if (!keep.count(n)) final_exclude.push_back(n);
  p.exclude = join_hostlist(final_exclude);
  return p;
}

// A job cancelled during its failover (scancel by its owner or an administrator) ends for good:
// safed requeued a job cancelled during its checkpoint grace and brought it back. safed's own
// checkpoint signal never cancels (it is never SIGKILL). A failover of the cancel itself (a site
// that lists `cancelled` in failover.retry_classes) goes on.
static bool cancelled(const FailoverRecord& f, const SlurmJob& job) {
  return job.state == SlurmJobState::cancelled && f.failure_class != to_string(FailureClass::cancelled);
}

FailoverStep decide_waiting(const FailoverRecord& f, const SlurmJob& job, int checkpoint_signal, long long now) {
  FailoverStep s;
  if (cancelled(f, job)) {
    s.kind = FailoverStep::Kind::ended;
    return s;
  }
  if (now < f.not_before) {
    s.deferral = Deferral::backoff;
    return s;
  }
  s.kind = FailoverStep::Kind::begin;
  // A job that is not running (or is winding down) has nothing to checkpoint.
  if (job.state == SlurmJobState::running && !job.completing && checkpoint_signal > 0) s.signal = checkpoint_signal;
  return s;
}

FailoverStep decide_signalled(const FailoverRecord& f, const SlurmJob& job, int grace_s, bool checkpointed,
                              long long now) {
  FailoverStep s;
  if (cancelled(f, job)) {
    s.kind = FailoverStep::Kind::ended;
    return s;
  }
  bool left = job.state != SlurmJobState::running || job.completing;
  if (!left && !checkpointed && now < f.signal_time + grace_s) return s;
  s.kind = FailoverStep::Kind::stop_waiting;
  s.why = checkpointed ? "new checkpoint complete" : left ? "job stopped" : "grace of " + std::to_string(grace_s) + " s over";
  return s;
}

// Requeueing a job while one of its nodes does not answer leaves its old allocation completing
// on that node; when Slurm later sets the node DOWN it deallocates the requeued job's GRES from
// the wrong allocation (22.05: "gres/gpu: job N dealloc of node nK bad node_offset 0 count is
// 0"), and the next attempt fails in its first srun with "Invalid generic resource (gres)
// specification". So a failover first sets such a node DOWN itself (Slurm then ends the job with
// NODE_FAIL and frees the node, as for a node the probes found dead), adds it (or one Slurm
// already set DOWN) to the job's bad nodes as a node fault, and requeues only once the job holds
// none of its nodes any more.
FailoverStep decide_requeueing(const FailoverRecord& f, const SlurmJob& job, const std::vector<RunNode>& run_nodes) {
  FailoverStep s;
  if (job.restart_count > f.attempt) {
    s.kind = FailoverStep::Kind::requeued_by_slurm;
    return s;
  }
  if (cancelled(f, job)) {
    s.kind = FailoverStep::Kind::ended;
    return s;
  }
  s.kind = FailoverStep::Kind::requeue;
  // Still on its nodes: running, or winding down. Once released, only the blame is recorded.
  bool holding = job.state == SlurmJobState::running || job.completing;
  for (const RunNode& n : run_nodes) {
    if (!(n.down || n.unanswered)) continue;
    s.hold = s.hold || holding;
    SilentNode silent{n.name, n.reason, false};
    if (!n.state_down) {
      // Slurm's own "not responding" is one missed ping, common on a busy node: Slurm either
      // clears it or sets the node DOWN itself after SlurmdTimeout, so the requeue just waits.
      // Only safed's probes (several failures in a row) are enough to take a node out here.
      if (!n.unanswered || !holding) continue;
      silent.reason = std::string(kUnreachablePrefix) + " slurmd did not answer safed's probe when job " +
                      std::to_string(job.id) + " failed over";
      silent.set_down = true;
    }
    s.silent.push_back(std::move(silent));
  }
  if (s.hold) s.deferral = Deferral::silent_nodes;
  return s;
}

std::string lost_requeue_text(const SlurmJob& job) {
  return "the requeue is lost (Slurm shows run " + std::to_string(job.restart_count + 1) + " " +
         (job.state == SlurmJobState::running ? "going on" : "ended") +
         ", uncounted: slurmctld restarted from state saved before it); requeueing again";
}

FailoverStep decide_requeued(const FailoverRecord& f, const SlurmJob& job, const RestartPlacement& placement,
                             long long now) {
  FailoverStep s;
  if (job.restart_count <= f.attempt) {
    // A requeue shows at once: the job PENDING (and completing), its restart counted. The run
    // going on, or ended as before, uncounted means slurmctld lost it: killed before it saved its
    // state, it came back from what it had saved before (a run going on it would requeue itself
    // only a minute or more later, once it misses the batch script on its node; an ended one never).
    if (job.completing) return s;
    if (cancelled(f, job)) {
      s.kind = FailoverStep::Kind::ended;
      return s;
    }
    if (job.state == SlurmJobState::running || ended(job.state)) s.kind = FailoverStep::Kind::requeue_lost;
    return s;
  }
  // While the old run winds down Slurm has not yet set its own requeue hold: a StartTime set now
  // would be overwritten by it.
  if (job.completing) return s;
  if (ended(job.state)) {  // cancelled (or ended) while failing over: leave it
    s.kind = FailoverStep::Kind::ended;
    return s;
  }
  if (job.state == SlurmJobState::running) {
    s.kind = FailoverStep::Kind::restart;
    s.running_again = true;
    return s;
  }
  // The margin is waited out here, not handed to Slurm as a later StartTime: Slurm starts a job
  // whose begin time has passed only at its next scheduling cycle, safed's update at once.
  if (placement.reuses_left && now < f.requeue_time + kRevokeMargin_s) return s;
  s.kind = FailoverStep::Kind::restart;
  s.placement = placement;
  s.start = std::max(now, f.not_before);
  return s;
}

bool blame_node(FailoverRecord& f, const std::string& node, const std::string& reason) {
  std::vector<std::string> bad = expand_hostlist(f.bad_nodes);
  if (std::find(bad.begin(), bad.end(), node) != bad.end()) return false;
  bad.push_back(node);
  f.bad_nodes = join_hostlist(bad);
  f.failure_class = std::string(to_string(FailureClass::node_fault));
  f.evidence = node + ": " + (reason.empty() ? "down" : reason) + "; before: " + f.evidence;
  return true;
}

}  // namespace safe
