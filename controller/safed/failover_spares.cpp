// Hot spares: the planner's side of failover.spares. The decisions are spare_pool.hpp's; here
// they meet Slurm's view (nodes, partitions, reservations, jobs) and act through SlurmActions.
#include <algorithm>

#include "common/cluster_shape.hpp"
#include "common/hostlist.hpp"
#include "common/spare_reservation.hpp"
#include "controller/safed/failover_planner.hpp"

namespace safe {

namespace {

// A claimed job that has not started this long after its restart has lost its place: something
// other than nodes holds it (a limit, a hold); its claim ends and it waits in the queue.
constexpr long long kClaimTimeout_s = 60;

std::string join_users(std::set<std::string> users) {
  users.insert("root");
  std::string out;
  for (const auto& u : users) out += (out.empty() ? "" : ",") + u;
  return out;
}

}  // namespace

const SparePoolConfig* FailoverPlanner::spare_pool_of(const TrackedJob& t) const {
  // Spares are for a node's fault, of a job that can be retried, whose node count is fixed (Slurm
  // would give a MIN-MAX job every node of the reservation it can) and that named no nodes (-w).
  if (t.node_range || t.required_nodes || t.record.retries_used >= t.record.max_retries) return nullptr;
  // The partition it ran in: a pending job shows every partition it asked for (-p a,b).
  auto held = spare_claims_.find(t.record.job_id);
  const std::string& partition = held != spare_claims_.end() ? held->second.partition : t.partition;
  for (const SparePoolConfig& pool : config_.failover.spares) {
    if (pool.partition != partition) continue;
    if (!pool.workspaces.empty() &&
        std::find(pool.workspaces.begin(), pool.workspaces.end(), t.record.workspace) == pool.workspaces.end())
      return nullptr;
    return &pool;
  }
  return nullptr;
}

SparePoolView FailoverPlanner::spare_pool_view(const SparePoolConfig& pool) const {
  SparePoolView v;
  v.config = &pool;
  std::string name = spare_reservation_name(pool.partition);
  for (const SlurmPartition& p : partitions_)
    if (p.name == pool.partition) v.partition_nodes = expand_hostlist(p.nodes);
  for (const SlurmReservation& r : reservations_) {
    for (std::string& n : expand_hostlist(r.nodes)) {
      // Future reservations too: Slurm refuses a spare reservation (lasting a year) that would
      // overlap one.
      if (r.name == name) v.reserved.insert(std::move(n));
      else v.other_reservations.insert(std::move(n));
    }
  }
  for (const auto& [id, claim] : spare_claims_)
    if (claim.partition == pool.partition) v.claimed.insert(claim.nodes.begin(), claim.nodes.end());
  for (const SlurmNode& n : nodes_) {
    NodeCondition c = node_condition(n);
    if (c == NodeCondition::safe_drain || c == NodeCondition::quarantined ||
        (c == NodeCondition::down && n.reason.rfind("SaFE", 0) == 0))
      v.out_for_repair.insert(n.name);
    // Slurm flags a node it has just resumed not responding until its next ping (about a
    // second): a spare coming back stays in the pool meanwhile.
    if (n.not_responding && !n.state_down && !n.drain && v.reserved.count(n.name)) v.out_for_repair.insert(n.name);
  }
  v.unanswered.insert(unanswered_.begin(), unanswered_.end());
  return v;
}

void FailoverPlanner::hold_survivors(const FailoverRecord& f, const TrackedJob& t, const SlurmJob& job,
                                     long long now) {
  // Only a node's fault, or an elastic job's grow back (its own nodes would go to the queue at its
  // requeue): a job that fails on its own (an exit code, a hang) would otherwise keep its nodes
  // from the queue, or take spares, as often as it fails.
  if (f.failure_class != to_string(FailureClass::node_fault) && f.failure_class != kGrowBackClass) return;
  std::vector<std::string> bad = expand_hostlist(f.bad_nodes);
  hold_nodes(t, f.attempt, job.nodes.empty() ? t.attempt_nodes : job.nodes, {bad.begin(), bad.end()},
             job.state == SlurmJobState::running, now);
}

void FailoverPlanner::hold_before_node_loss(const std::string& lost, long long now) {
  if (!spare_inputs_ok_ || config_.failover.spares.empty()) return;
  // Best effort: the DOWN that follows must never wait for this (a store that cannot be
  // written, say); the job's nodes then go back to the queue as without spares.
  try {
    store_.begin();
    for (const auto& [id, t] : jobs_) {
      if (t.record.state != SafeJobState::running || t.running_attempt < 0) continue;
      std::vector<std::string> names = expand_hostlist(t.attempt_nodes);
      if (std::find(names.begin(), names.end(), lost) == names.end()) continue;
      hold_nodes(t, t.running_attempt, t.attempt_nodes, {lost}, true, now);
    }
    store_.commit();
  } catch (const std::exception& e) {
    store_.rollback();
    log(std::string("safed: spares: could not hold the nodes of the jobs on ") + lost + ": " + e.what(),
        LogPriority::warning);
  }
}

void FailoverPlanner::hold_nodes(const TrackedJob& t, int run, const std::string& nodes,
                                 const std::set<std::string>& off, bool running, long long now) {
  if (!spare_inputs_ok_) return;
  const SparePoolConfig* pool = spare_pool_of(t);
  if (!pool) return;
  std::uint32_t id = t.record.job_id;
  auto held = spare_claims_.find(id);
  if (held != spare_claims_.end() && held->second.run == run) return;
  SpareClaim claim{pool->partition, {}, user_names_(t.record.user_id), now, run};
  for (const std::string& name : expand_hostlist(nodes)) {
    const SlurmNode* n = node(name);
    // Busy: with this job while it runs; once Slurm freed the node, with another job already.
    if (!n || n->down || n->drain || unanswered_.count(name) || off.count(name) || (!running && n->busy)) continue;
    claim.nodes.push_back(name);
  }
  if (claim.nodes.empty()) return;
  spare_claims_[id] = claim;
  std::map<std::string, const SlurmNode*> states(node_index_.begin(), node_index_.end());
  Status put = put_spare_reservation(*pool, plan_spare_pool(spare_pool_view(*pool), states), now);
  if (put) {
    log("safed: job " + std::to_string(id) + ": its healthy " + join_hostlist(claim.nodes) + " held in " +
        spare_reservation_name(pool->partition) + " for its restart");
  } else {
    spare_claims_.erase(id);  // it restarts through the queue, as without spares
  }
}

bool FailoverPlanner::wait_for_spares(const FailoverRecord& f, const TrackedJob& t, const SlurmJob& job,
                                      const FailoverStep& s, long long now) {
  // A restart held back (its backoff) is no restart at once: spares are for those; so is a
  // failover for a node's fault (see hold_survivors).
  if (!spare_inputs_ok_ || s.running_again || s.start > now) return false;
  bool grow_back = f.failure_class == kGrowBackClass;
  if (f.failure_class != to_string(FailureClass::node_fault) && !grow_back) return false;
  const SparePoolConfig* pool = spare_pool_of(t);
  if (!pool) return false;
  SpareRequest r;
  r.job_id = job.id;
  // A grow back is for the job's full size: its own nodes, held, and spares for the rest. An
  // elastic job's failover is for the size it ran at (Slurm's count of a pending job can be an
  // estimate).
  std::uint32_t ran_on = static_cast<std::uint32_t>(expand_hostlist(t.attempt_nodes).size());
  bool elastic = t.meta.settings.min_nodes > 0;
  r.nodes = std::max<std::uint32_t>(1, grow_back ? static_cast<std::uint32_t>(t.meta.settings.full_nodes)
                                       : elastic && ran_on ? ran_on
                                                           : job.num_nodes);
  r.planned = grow_back;
  r.fault_time = f.fault_time;
  // Never on a node the job excluded itself or one that failed it now (one that failed it before
  // and is a spare now has passed its checks since); free nodes outside the reservation also not
  // on one the placement keeps it off (the nodes it just left).
  std::vector<std::string> bad = expand_hostlist(t.record.user_exclude);
  for (auto& n : expand_hostlist(f.bad_nodes)) bad.push_back(n);
  r.excluded = bad;
  std::set<std::string> off(bad.begin(), bad.end());
  for (auto& n : expand_hostlist(s.placement.exclude)) off.insert(n);
  // Its held nodes first, then free nodes outside any reservation: a job in the reservation runs
  // only on the reservation's nodes, so the free ones it takes join it too.
  auto held = spare_claims_.find(job.id);
  std::set<std::string> own;
  if (held != spare_claims_.end() && held->second.run == f.attempt)
    for (const auto& n : held->second.nodes)
      if (std::find(bad.begin(), bad.end(), n) == bad.end()) own.insert(n);
  SparePoolView view = spare_pool_view(*pool);
  for (bool held_pass : {true, false}) {
    for (const std::string& name : view.partition_nodes) {
      const SlurmNode* n = node(name);
      if (!n || n->down || n->drain || n->busy || own.count(name) != held_pass) continue;
      // As of now: a hold earlier in this pass may have reserved a node since the pass began.
      if (!held_pass && (off.count(name) || view.reserved.count(name) || view.other_reservations.count(name))) continue;
      r.ready.push_back(name);
    }
  }
  // Without held nodes, a job the free nodes can hold restarts through the queue as before.
  if (own.empty() && r.ready.size() >= r.nodes) return false;
  // Held nodes are the nodes it just left: not before the second of the old run's revocation
  // (place_restart asked no wait when free nodes elsewhere could hold it). Tried next pass.
  if (!own.empty() && now < f.requeue_time + kRevokeMargin_s) return true;
  spare_requests_.push_back({pool->partition, std::move(r), s});
  return true;
}

void FailoverPlanner::serve_spare_requests(const std::vector<SlurmJob>& jobs, long long now) {
  if (spare_requests_.empty()) return;
  std::vector<WaitingForSpares> waiting = std::exchange(spare_requests_, {});
  std::map<std::uint32_t, const SlurmJob*> by_id;
  for (const SlurmJob& j : jobs) by_id[j.id] = &j;
  // The open failover of a waiting job, as advance left it this pass.
  auto failover_of = [&](std::uint32_t id) -> FailoverRecord* {
    auto t = jobs_.find(id);
    if (t == jobs_.end()) return nullptr;
    for (auto& [key, f] : open_)
      if (key.first == t->second.record.key() && f.phase == FailoverPhase::requeued) return &f;
    return nullptr;
  };
  auto restart_waiting = [&](const WaitingForSpares& w, FailoverStep s) {
    const SlurmJob* job = by_id[w.request.job_id];
    FailoverRecord* f = failover_of(w.request.job_id);
    if (!job || !f) return;
    TrackedJob& t = jobs_[w.request.job_id];
    restart(*f, t, *job, t.meta, s, now);
    store_.put_job(t.record);  // observe_job wrote the record before this restart changed it
    if (f->phase == FailoverPhase::done) open_.erase({f->key(), f->attempt});
  };
  for (const SparePoolConfig& pool : config_.failover.spares) {
    std::vector<SpareRequest> requests;
    for (const auto& w : waiting)
      if (w.partition == pool.partition) requests.push_back(w.request);
    if (requests.empty()) continue;
    std::map<std::string, const SlurmNode*> states;
    for (const auto& [name, n] : node_index_) states[name] = n;
    SparePoolPlan plan = plan_spare_pool(spare_pool_view(pool), states);
    std::vector<SpareGrant> grants = grant_spares(requests, plan.free);
    // A held job granted nothing lets its held nodes go: it restarts through the queue.
    for (const auto& r : requests) {
      bool granted = std::any_of(grants.begin(), grants.end(), [&](const SpareGrant& g) { return g.job_id == r.job_id; });
      if (!granted) spare_claims_.erase(r.job_id);
    }
    for (const SpareGrant& g : grants) {
      const SlurmJob* job = by_id[g.job_id];
      FailoverRecord* f = failover_of(g.job_id);
      SpareClaim claim{pool.partition, g.own, user_names_(job ? job->user_id : 0), now, f ? f->attempt : 0};
      claim.nodes.insert(claim.nodes.end(), g.spares.begin(), g.spares.end());
      spare_claims_[g.job_id] = claim;
    }
    if (grants.empty()) continue;
    // One reservation change for all of this pool's grants, before any job is moved into it.
    SparePoolPlan with_claims = plan_spare_pool(spare_pool_view(pool), states);
    Status put = put_spare_reservation(pool, with_claims, now);
    for (const SpareGrant& g : grants) {
      if (!put) {
        spare_claims_.erase(g.job_id);
        continue;  // restarted below as if no spare were free
      }
      for (auto& w : waiting) {
        if (w.request.job_id != g.job_id) continue;
        FailoverStep s = w.step;
        // Off its bad nodes and its own exclusions, and off every node of the reservation but
        // those granted: in the reservation Slurm could otherwise start it on another job's
        // claim or on spares nobody gave it.
        std::vector<std::string> exclude = w.request.excluded;
        std::set<std::string> granted(g.own.begin(), g.own.end());
        granted.insert(g.spares.begin(), g.spares.end());
        for (const std::string& n : with_claims.nodes)
          if (!granted.count(n)) exclude.push_back(n);
        s.placement.exclude = join_hostlist(exclude);
        s.placement.bad_not_excluded.clear();
        s.placement.reservation = spare_reservation_name(pool.partition);
        s.placement.spare_nodes = static_cast<std::uint32_t>(granted.size());
        if (g.spares.empty()) {
          log("safed: job " + std::to_string(g.job_id) + ": restarts on its held " + join_hostlist(g.own));
        } else {
          log("safed: job " + std::to_string(g.job_id) + ": hot spare" + (g.spares.size() > 1 ? "s " : " ") +
              join_hostlist(g.spares) + " of partition " + pool.partition + " with " +
              (g.own.empty() ? std::string("none of its own") : join_hostlist(g.own)));
          ++counters_.spare_placements[pool.partition];
        }
        restart_waiting(w, s);
        w.request.job_id = 0;  // served
      }
    }
  }
  for (const auto& w : waiting)
    if (w.request.job_id) restart_waiting(w, w.step);
}

Status FailoverPlanner::put_spare_reservation(const SparePoolConfig& pool, const SparePoolPlan& plan, long long now) {
  std::string name = spare_reservation_name(pool.partition);
  const SlurmReservation* current = nullptr;
  for (const SlurmReservation& r : reservations_)
    if (r.name == name) current = &r;
  std::set<std::string> users;
  for (const auto& [id, claim] : spare_claims_)
    if (claim.partition == pool.partition) users.insert(claim.user);
  ReservationChange change{name, join_hostlist(plan.nodes), join_users(users), current == nullptr};
  std::vector<std::string> now_nodes = current ? expand_hostlist(current->nodes) : std::vector<std::string>{};
  std::set<std::string> have(now_nodes.begin(), now_nodes.end()), want(plan.nodes.begin(), plan.nodes.end());
  if (current && have == want && current->users == change.users) return ok_status();
  if (plan.nodes.empty()) {
    // Slurm keeps no reservation without nodes: the old set stays until a node can be a spare.
    std::string why = "no node of partition " + pool.partition + " can be a spare now";
    if (spare_errors_[pool.partition] != why) log("safed: spares: " + why, LogPriority::warning);
    spare_errors_[pool.partition] = why;
    return Error{why};
  }
  checkpoint_store();
  Status put = slurm_.put_reservation(change);
  // A refusal that repeats (every pass) is logged once.
  if (put || spare_errors_[pool.partition] != put.error()) {
    std::string detail = name + " Nodes=" + change.nodes + " Users=" + change.users + (put ? "" : ": " + put.error());
    store_.log_action({now, JobKey{}, "", "spare pool", detail, put.ok()});
    log("safed: spares: " + std::string(put ? "" : "FAILED: ") + detail, put ? LogPriority::notice : LogPriority::warning);
  }
  if (!put) spare_errors_[pool.partition] = put.error();
  if (put) {
    spare_errors_.erase(pool.partition);
    if (current) {
      for (SlurmReservation& r : reservations_)
        if (r.name == name) r.nodes = change.nodes, r.users = change.users;
    } else {
      reservations_.push_back({name, change.nodes, change.users, true});
    }
  }
  return put;
}

void FailoverPlanner::maintain_spare_pools(const std::vector<SlurmJob>& jobs, long long now) {
  if (config_.failover.spares.empty()) {
    spare_plans_.clear();
    return;
  }
  if (!spare_inputs_ok_) return;
  std::map<std::uint32_t, const SlurmJob*> by_id;
  for (const SlurmJob& j : jobs) by_id[j.id] = &j;
  // Claims end when a later run of their job runs (its nodes leave the reservation: it is an
  // ordinary job again), when it ends, or past kClaimTimeout_s (then it waits in the queue as
  // any job).
  for (auto it = spare_claims_.begin(); it != spare_claims_.end();) {
    const SlurmJob* job = by_id.count(it->first) ? by_id[it->first] : nullptr;
    bool pending = job && waiting_to_start(*job);
    // A requeued run winding down shows RUNNING with the new restart count: not a restart yet.
    bool restarted = job && job->state == SlurmJobState::running && !job->completing && job->restart_count > it->second.run;
    if (job && !restarted && !has_ended(*job) && now - it->second.since < kClaimTimeout_s) {
      ++it;
      continue;
    }
    if (job && !named_spare_reservation(job->reservation).empty() && !has_ended(*job)) {
      JobChange out;
      out.id = job->id;
      out.reservation = "";
      checkpoint_store();
      Status left = slurm_.update_job(out);
      if (!left) log("safed: job " + std::to_string(job->id) + ": cannot take it out of the spare reservation: " +
                         left.error(), LogPriority::warning);
      else if (pending) log("safed: job " + std::to_string(job->id) + " did not start on its spares within " +
                            std::to_string(kClaimTimeout_s) + " s; it waits in the queue", LogPriority::warning);
    }
    it = spare_claims_.erase(it);
  }
  // A pending job in a spare reservation that safed holds no claim for (its claim was lost with a
  // restart of safed, or an administrator put it there) would wait for nodes the pool may give
  // away: back to the queue.
  for (const SlurmJob& job : jobs) {
    if (job.reservation.empty() || !waiting_to_start(job) || spare_claims_.count(job.id)) continue;
    if (named_spare_reservation(job.reservation).empty()) continue;
    JobChange out;
    out.id = job.id;
    out.reservation = "";
    checkpoint_store();
    Status left = slurm_.update_job(out);
    log("safed: job " + std::to_string(job.id) + " was pending in " + job.reservation + " without a spare safed gave it" +
            (left ? "; back in the queue" : "; cannot take it out: " + left.error()),
        left ? LogPriority::notice : LogPriority::warning);
  }
  std::map<std::string, const SlurmNode*> states;
  for (const auto& [name, n] : node_index_) states[name] = n;
  double elapsed = spare_pass_time_ ? static_cast<double>(std::max(0LL, now - spare_pass_time_)) : 0;
  spare_pass_time_ = now;
  std::map<std::string, SparePoolPlan> plans;
  for (const SparePoolConfig& pool : config_.failover.spares) {
    SparePoolPlan plan = plan_spare_pool(spare_pool_view(pool), states);
    (void)put_spare_reservation(pool, plan, now);  // logged; tried again next pass
    for (const std::string& n : plan.free)
      if (const SlurmNode* s = node(n)) counters_.spare_idle_gpu_seconds[pool.partition] += gpus_in_node_gres(s->gres) * elapsed;
    plans[pool.partition] = std::move(plan);
  }
  spare_plans_ = std::move(plans);
}

}  // namespace safe
