// Shrink and continue, grow back (controller/safed/elastic_size.hpp has the rules). An elastic
// job's restart asks for the node count elastic_node_count gives; while it waits in the queue
// after safed restarted it, that count follows the free nodes (shrinking once
// failover.shrink_after_s has passed since the fault, back up when they come back); and a job
// running short of its nodes grows back through a planned restart, a failover of the class
// "grow_back" that costs no retry, waits out the failover backoff and takes a slot of the rate
// limit like any other.
#include <algorithm>

#include "common/hostlist.hpp"
#include "common/requeue_storm_guard.hpp"
#include "common/spare_reservation.hpp"
#include "controller/safed/elastic_size.hpp"
#include "controller/safed/failover_planner.hpp"

namespace safe {
namespace {

ElasticSize elastic_size_of(const JobMetadata& meta) {
  return {meta.settings.full_nodes, meta.settings.min_nodes, meta.settings.node_multiple};
}

std::set<std::string> host_set(const std::string& hostlist) {
  auto names = expand_hostlist(hostlist);
  return {names.begin(), names.end()};
}

}  // namespace

std::set<std::string> FailoverPlanner::partition_nodes(const std::string& partitions) const {
  std::set<std::string> out;
  std::size_t pos = 0;
  while (pos <= partitions.size()) {
    std::size_t end = std::min(partitions.find(',', pos), partitions.size());
    std::string name = partitions.substr(pos, end - pos);
    pos = end + 1;
    for (const SlurmPartition& p : partitions_)
      if (p.name == name)
        for (auto& n : expand_hostlist(p.nodes)) out.insert(std::move(n));
  }
  return out;
}

bool FailoverPlanner::needs_partitions() const {
  if (!config_.failover.spares.empty()) return true;
  for (const auto& [id, t] : jobs_)
    if (t.meta.settings.min_nodes > 0) return true;
  return false;
}

std::optional<std::uint32_t> FailoverPlanner::elastic_restart_size(const FailoverRecord& f, const SlurmJob& job,
                                                                  const JobMetadata& meta, const std::string& exclude,
                                                                  long long now) const {
  ElasticSize e = elastic_size_of(meta);
  // Without the partitions safed cannot tell which free nodes the job could have: it keeps its size.
  if (!e.elastic() || !spare_inputs_ok_) return std::nullopt;
  std::set<std::string> part = partition_nodes(job.partition);
  if (part.empty()) return std::nullopt;
  long long usable = free_nodes_for(nodes_, part, host_set(exclude));
  return static_cast<std::uint32_t>(
      elastic_node_count(e, usable, now - f.fault_time >= config_.failover.shrink_after_s));
}

void FailoverPlanner::resize_waiting_jobs(const std::vector<SlurmJob>& jobs, long long now) {
  if (!spare_inputs_ok_) return;
  for (const SlurmJob& job : jobs) {
    auto it = jobs_.find(job.id);
    if (it == jobs_.end()) continue;
    TrackedJob& t = it->second;
    // Only a job safed restarted, waiting for its next run, out of the spares and not held.
    if (!t.restart_change || t.meta.settings.min_nodes <= 0 || !waiting_to_start(job) ||
        job.restart_count != t.requeued_attempt + 1 || !named_spare_reservation(job.reservation).empty() ||
        t.record.state == SafeJobState::held || job.reason == "JobHeldUser" || job.reason == "JobHeldAdmin")
      continue;
    auto f = store_.failover(t.record.key(), t.requeued_attempt);
    if (!f) continue;
    auto want = elastic_restart_size(*f, job, t.meta, job.exc_nodes, now);
    // What safed last asked for: a pending job's NumNodes in Slurm's report can be the
    // scheduler's estimate from its last run, not its request.
    std::uint32_t asked = t.restart_change->num_nodes.value_or(job.num_nodes);
    if (!want || *want == asked) continue;
    JobChange change;
    change.id = job.id;
    change.num_nodes = *want;
    const char* what = *want < asked ? "shrink" : "grow";
    checkpoint_store();
    Status resized = slurm_.update_job(change);
    int full = t.meta.settings.full_nodes;
    log_action(now, t.record.key(), "", what,
               "NumNodes=" + std::to_string(*want) + " of " + std::to_string(full) + " (" +
                   std::to_string(now - f->fault_time) + " s after the fault" +
                   (*want < static_cast<std::uint32_t>(full) ? ", failover.shrink_after_s=" +
                                                                    std::to_string(config_.failover.shrink_after_s)
                                                              : "") +
                   ")" + (resized ? "" : ": " + resized.error()),
               resized.ok());
    if (resized) t.restart_change->num_nodes = *want;
  }
}

void FailoverPlanner::check_grow_back(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now) {
  ElasticSize e = elastic_size_of(meta);
  if (!e.elastic() || !spare_inputs_ok_ || job.completing || static_cast<int>(job.num_nodes) >= e.full) return;
  std::set<std::string> part = partition_nodes(job.partition);
  if (part.empty()) return;
  // Beside its own nodes (busy with it) and those its owner excluded; the nodes that failed it
  // earlier count once they are back in service (repaired).
  long long free_beside = free_nodes_for(nodes_, part, host_set(t.record.user_exclude));
  if (!grow_back_due(e, static_cast<int>(job.num_nodes), free_beside)) return;
  const JobKey key = t.record.key();
  // The backoff of a failover keeps a job whose nodes come and go from restarting over and over:
  // the grow back waits it out before it begins (the free nodes may be gone by then).
  long long last_requeue = 0;
  for (const auto& prev : store_.failovers(key))
    if (prev.phase == FailoverPhase::done) last_requeue = std::max(last_requeue, prev.requeue_time);
  last_requeue = std::min(last_requeue, now);
  const auto& fc = config_.failover;
  long long not_before =
      last_requeue + failover_backoff_s(t.record.retries_used, fc.backoff_initial_s, fc.backoff_max_s);
  if (now < not_before) {
    defer(job.id, Deferral::backoff,
          "grows back in " + std::to_string(not_before - now) + " s (backoff after its last restart)");
    return;
  }
  int attempt = job.restart_count;
  std::string evidence = std::to_string(free_beside) + " node(s) free beside its " + std::to_string(job.num_nodes) +
                         "; growing back to " + std::to_string(e.full);
  t.classified_attempt = attempt;
  store_.put_attempt({job.id, key.submitted, attempt, job.nodes, t.attempt_start ? t.attempt_start : job.start_time, 0,
                      std::string(kGrowBackClass), std::string(kGrowBackClass), "elastic", evidence});
  log("safed: job " + std::to_string(job.id) + " attempt " + std::to_string(attempt + 1) + ": " + evidence);
  FailoverRecord f;
  f.job_id = job.id;
  f.submitted = key.submitted;
  f.attempt = attempt;
  f.failure_class = std::string(kGrowBackClass);
  f.evidence = evidence;
  f.phase = FailoverPhase::waiting;
  f.fault_time = now;
  f.not_before = now;
  f.workspace = t.record.workspace;
  f.gpus = t.record.gpus;
  f.uses_retry = false;  // planned: the job lost nothing it must pay a retry for
  store_.put_failover(f);
  t.record.state = SafeJobState::failing_over;
  auto& open = open_[{key, attempt}] = f;
  advance(open, t, job, meta, now);
  if (open.phase == FailoverPhase::done || open.phase == FailoverPhase::refused) open_.erase({key, attempt});
}

}  // namespace safe
