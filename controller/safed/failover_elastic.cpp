// Shrink and continue, grow back (controller/safed/elastic_size.hpp has the rules). An elastic
// job's restart asks for the node count elastic_node_count gives; while it waits in the queue
// after safed restarted it, that count follows the free nodes; and a job running short of its
// nodes grows back through a planned restart, a failover of the class "grow_back" that costs no
// retry, takes a slot of the rate limit like any other, and is called off when the free nodes it
// was for are gone before its requeue.
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

bool FailoverPlanner::needs_partitions() const {
  if (!config_.failover.spares.empty()) return true;
  for (const auto& [id, t] : jobs_)
    if (t.meta.settings.min_nodes > 0) return true;
  return false;
}

std::optional<FailoverPlanner::ElasticRoom> FailoverPlanner::elastic_room(const TrackedJob& t, const SlurmJob& job,
                                                                          const std::string& exclude,
                                                                          bool with_spares) const {
  if (!spare_inputs_ok_ || !elastic_size_of(t.meta).elastic()) return std::nullopt;
  // A job in a reservation of its own (not the spares') runs where that allows: safed cannot
  // tell which of the free nodes would take it.
  if (!job.reservation.empty() && named_spare_reservation(job.reservation).empty()) return std::nullopt;
  ElasticRoom room;
  std::size_t pos = 0;
  while (pos <= job.partition.size()) {
    std::size_t end = std::min(job.partition.find(',', pos), job.partition.size());
    std::string name = job.partition.substr(pos, end - pos);
    pos = end + 1;
    for (const SlurmPartition& p : partitions_)
      if (p.name == name)
        for (auto& n : expand_hostlist(p.nodes)) room.partition_nodes.insert(std::move(n));
  }
  if (room.partition_nodes.empty()) return std::nullopt;
  // Only nodes of the kinds it ran on count (GRES, CPUs): a partition may mix kinds.
  std::vector<std::string> ran_on = expand_hostlist(job.nodes.empty() ? t.attempt_nodes : job.nodes);
  for (const std::string& name : ran_on)
    if (const SlurmNode* n = node(name)) room.kinds.insert(node_kind(*n));
  std::set<std::string> excluded = host_set(exclude);
  room.free = free_nodes_for(nodes_, room.partition_nodes, excluded, room.kinds);
  auto usable = [&](const SlurmNode* n) {
    return n && !n->down && !n->drain && !n->busy && !excluded.count(n->name) && room.partition_nodes.count(n->name) &&
           room.kinds.count(node_kind(*n));
  };
  // The nodes it just left, held for it in the spare reservation through its requeue: its own.
  auto claim = spare_claims_.find(job.id);
  if (claim != spare_claims_.end())
    for (const std::string& name : claim->second.nodes) {
      const SlurmNode* n = node(name);
      if (usable(n) && n->reserved && std::find(ran_on.begin(), ran_on.end(), name) != ran_on.end()) ++room.free;
    }
  // The free hot spares of its partition's pool, for a grow back (in the reservation already).
  if (with_spares && spare_pool_of(t)) {
    auto plan = spare_plans_.find(job.partition);
    if (plan != spare_plans_.end())
      for (const std::string& name : plan->second.free)
        if (const SlurmNode* n = node(name); usable(n) && n->reserved) ++room.free;
  }
  for (const auto& [other, promise] : grow_promises_)
    if (other != job.id && room.partition_nodes.count(promise.first)) room.free -= promise.second;
  room.free = std::max(0LL, room.free);
  return room;
}

std::optional<std::uint32_t> FailoverPlanner::elastic_restart_size(const FailoverRecord& f, const TrackedJob& t,
                                                                  const SlurmJob& job, const std::string& exclude,
                                                                  long long now) const {
  auto room = elastic_room(t, job, exclude, false);
  if (!room) return std::nullopt;
  // A grow back's own wait for the nodes counts from its requeue, not from when it began.
  long long since = f.failure_class == kGrowBackClass ? std::max(f.fault_time, f.requeue_time) : f.fault_time;
  int ran_on = static_cast<int>(expand_hostlist(t.attempt_nodes).size());
  return static_cast<std::uint32_t>(elastic_node_count(elastic_size_of(t.meta), room->free,
                                                       now - since >= config_.failover.shrink_after_s, ran_on));
}

void FailoverPlanner::resize_waiting_jobs(const std::vector<SlurmJob>& jobs, long long now) {
  if (!spare_inputs_ok_) return;
  for (const SlurmJob& job : jobs) {
    auto it = jobs_.find(job.id);
    if (it == jobs_.end() || it->second.meta.settings.min_nodes <= 0) continue;
    TrackedJob& t = it->second;
    // Only a job safed restarted (its last failover done, the next run not started yet), waiting
    // in the queue out of the spares and not held. From the store: a restart of safed loses nothing.
    // A job safed placed on spares (its claim) runs at the size they were given for; the pass's view
    // of its reservation may predate that restart.
    if (!waiting_to_start(job) || job.restart_count < 1 || !named_spare_reservation(job.reservation).empty() ||
        spare_claims_.count(job.id) ||
        t.record.state == SafeJobState::held || job.reason == "JobHeldUser" || job.reason == "JobHeldAdmin")
      continue;
    auto f = store_.failover(t.record.key(), job.restart_count - 1);
    if (!f || f->phase != FailoverPhase::done || f->running_again_time) continue;
    auto want = elastic_restart_size(*f, t, job, job.exc_nodes, now);
    // What safed last asked for: a pending job's NumNodes in Slurm's report can be the
    // scheduler's estimate from its last run, not its request.
    auto asked_it = asked_nodes_.find(job.id);
    std::uint32_t asked = asked_it != asked_nodes_.end() ? asked_it->second : job.num_nodes;
    if (!want || *want == asked) continue;
    JobChange change;
    change.id = job.id;
    change.num_nodes = *want;
    int full = t.meta.settings.full_nodes;
    const char* what = *want < asked ? "shrink" : "grow";
    checkpoint_store();
    Status resized = slurm_.update_job(change);
    log_action(now, t.record.key(), "", what,
               "NumNodes=" + std::to_string(*want) + " of " + std::to_string(full) + " (" +
                   std::to_string(now - f->fault_time) + " s after the fault" +
                   (*want < static_cast<std::uint32_t>(full) ? ", failover.shrink_after_s=" +
                                                                    std::to_string(config_.failover.shrink_after_s)
                                                              : "") +
                   ")" + (resized ? "" : ": " + resized.error()),
               resized.ok());
    if (!resized) continue;
    if (*want < asked && asked == static_cast<std::uint32_t>(full)) ++counters_.elastic_shrinks;
    asked_nodes_[job.id] = *want;
    if (t.restart_change) t.restart_change->num_nodes = *want;
  }
}

// Nodes free for the job to grow back onto (a promise for it in this pass keeps other jobs from
// counting them too); nullopt when it cannot grow back now.
std::optional<long long> FailoverPlanner::grow_back_room(const TrackedJob& t, const SlurmJob& job) {
  ElasticSize e = elastic_size_of(t.meta);
  if (job.state != SlurmJobState::running || job.completing || static_cast<int>(job.num_nodes) >= e.full)
    return std::nullopt;
  // Beside its own nodes (busy with it) and those its owner excluded; the nodes that failed it
  // earlier count once they are back in service (repaired).
  // On a cluster a queue keeps full, nodes that come free go to queued jobs at once: a partition's
  // free hot spares count too (a grow back takes them as a failover does, its own nodes held).
  auto room = elastic_room(t, job, t.record.user_exclude, true);
  if (!room) return std::nullopt;
  if (!grow_back_due(e, static_cast<int>(job.num_nodes), room->free)) return std::nullopt;
  grow_promises_[job.id] = {job.partition, e.full - static_cast<long long>(job.num_nodes)};
  return room->free;
}

void FailoverPlanner::check_grow_back(TrackedJob& t, const SlurmJob& job, const JobMetadata& meta, long long now) {
  if (!elastic_size_of(meta).elastic() || t.classified_attempt >= job.restart_count) return;
  const JobKey key = t.record.key();
  // The failover backoff, doubled for each grow back of the job and never shorter than
  // shrink_after_s: a job whose nodes come and go (or that Slurm cannot place at its full size
  // where safed saw room) does not restart over and over. Counted from its last requeue.
  long long last_requeue = 0;
  int grow_backs = 0;
  for (const auto& prev : store_.failovers(key)) {
    if (prev.phase == FailoverPhase::done) last_requeue = std::max(last_requeue, prev.requeue_time);
    if (prev.failure_class == kGrowBackClass && prev.phase == FailoverPhase::done) ++grow_backs;
  }
  last_requeue = std::min(last_requeue, now);
  const auto& fc = config_.failover;
  long long wait = std::max<long long>(fc.shrink_after_s,
                                       failover_backoff_s(grow_backs + 1, std::max(1, fc.backoff_initial_s),
                                                          std::max(1, fc.backoff_max_s)));
  if (now < last_requeue + wait) return;
  auto free = grow_back_room(t, job);
  if (!free) return;
  int attempt = job.restart_count;
  std::string evidence = std::to_string(*free) + " node(s) free beside its " + std::to_string(job.num_nodes) +
                         "; growing back to " + std::to_string(meta.settings.full_nodes);
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

bool FailoverPlanner::grow_back_called_off(FailoverRecord& f, TrackedJob& t, const SlurmJob& job) {
  // Only while the run it would end still runs as it was: one Slurm requeued meanwhile (a node
  // died) is a failure, taken up as any.
  if (f.failure_class != kGrowBackClass || job.state != SlurmJobState::running || job.completing ||
      job.restart_count != f.attempt || grow_back_room(t, job))
    return false;
  // The nodes it was for are gone (or the job stopped running): it runs on as it was. The
  // attempt is open again for what may befall it.
  f.phase = FailoverPhase::refused;
  store_.put_failover(f);
  // Its nodes held for the requeue go back (the reservation follows at the end of the pass).
  if (auto claim = spare_claims_.find(job.id); claim != spare_claims_.end() && claim->second.run == f.attempt)
    spare_claims_.erase(claim);
  store_.put_attempt({job.id, f.submitted, f.attempt, job.nodes, t.attempt_start ? t.attempt_start : job.start_time, 0,
                      "", "", "", ""});
  t.classified_attempt = f.attempt - 1;
  t.record.state = safe_job_state(job.state);
  last_deferral_.erase(job.id);
  log("safed: job " + std::to_string(job.id) + ": grow back called off (the free nodes are gone); it runs on " +
      std::to_string(job.num_nodes) + " node(s)");
  return true;
}

}  // namespace safe
