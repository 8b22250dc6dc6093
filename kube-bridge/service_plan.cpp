#include "kube-bridge/service_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace safe::bridge {
namespace {

const ReplicaJobObservation* seen_job(const ServiceObservation& seen, std::uint32_t id) {
  if (id == 0) return nullptr;
  auto it = seen.jobs.find(id);
  return it == seen.jobs.end() ? nullptr : &it->second;
}

bool gone(const ReplicaJobObservation* job) { return !job || !job->live; }

void event(ServiceRecord& r, std::time_t now, std::string type, int replica, std::string message) {
  add_event(r, {now, std::move(type), replica, std::move(message)});
}

// `first`, doubled for each failure after the first, at most kMaxBackoffS.
int backoff_s(int first, int failures) {
  int s = first;
  for (int i = 1; i < failures && s < kMaxBackoffS; ++i) s *= 2;
  return std::min(s, kMaxBackoffS);
}

// The port for a new job of the service: the spec's plus the lowest offset no live job of the
// service holds (two replicas may land on one node; the spec's check leaves room for
// 2 x maxReplicas ports).
int free_port(const ServiceRecord& r, const ServiceObservation& seen, const std::vector<int>& taken_now) {
  std::set<int> taken(taken_now.begin(), taken_now.end());
  for (const auto& x : r.replicas) {
    if (x.job_id) taken.insert(x.port);
    if (x.replacement_job) taken.insert(x.replacement_port);
  }
  // A job cancelled or ended whose processes are still being killed may hold its port.
  for (const auto& [id, job] : seen.jobs)
    if ((job.live || job.completing) && job.port > 0) taken.insert(job.port);
  int port = r.spec.service.port;
  while (taken.count(port) && port < 65535) ++port;
  return port;
}

// A new job of replica `x`, kept off the node it was last lost on (while another node is in
// service) and, while an idle node is left, off the nodes its service's other replicas run on.
ReplicaStart start_of(const ServiceRecord& r, const ReplicaState& x, const ServiceObservation& seen, bool replacement,
                      const std::vector<int>& ports_planned) {
  ReplicaStart s{x.index, free_port(r, seen, ports_planned), replacement, {}, false};
  if (x.start_failures > 0) return s;
  std::set<std::string> avoid(x.avoid_nodes.begin(), x.avoid_nodes.end());
  auto some_left = [](const std::set<std::string>& nodes, const std::set<std::string>& out) {
    for (const auto& n : nodes)
      if (!out.count(n)) return true;
    return false;
  };
  if (!some_left(seen.usable_nodes, avoid)) return s;
  std::set<std::string> spread = avoid;
  for (const auto& other : r.replicas)
    if (other.index != x.index)
      for (auto id : {other.job_id, other.replacement_job})
        if (const auto* job = seen_job(seen, id); job && job->live && !job->node.empty()) spread.insert(job->node);
  s.spread = !x.spread_given_up && spread.size() > avoid.size() && some_left(seen.free_nodes, spread);
  const auto& chosen = s.spread ? spread : avoid;
  s.excluded_nodes.assign(chosen.begin(), chosen.end());
  return s;
}

// Whether a new job of replica `x` should wait for a sibling's job, submitted before it, to get its
// node (else Slurm may pack them all on one): while some node in service hosts none of them.
bool wait_for_placement(const ServiceRecord& r, const ReplicaState& x, const ServiceObservation& seen, bool planned_this_pass) {
  std::set<std::string> hosting;
  bool placing = planned_this_pass;
  for (const auto& other : r.replicas) {
    if (other.index == x.index) continue;
    for (auto id : {other.job_id, other.replacement_job}) {
      const auto* job = seen_job(seen, id);
      if (!job || !job->live) continue;
      if (!job->node.empty()) hosting.insert(job->node);
      else if (seen.now - other.started_at < kPlacementWaitS) placing = true;
    }
  }
  if (!placing) return false;
  for (const auto& n : seen.usable_nodes)
    if (!hosting.count(n)) return true;
  return false;
}

std::string ended_how(const ReplicaJobObservation* job) {
  if (!job) return "its job left Slurm";
  return "exit code " + std::to_string(job->exit_code) + (job->node.empty() ? "" : " on " + job->node);
}

// The replica's own failure: back off, and count towards crash-looping unless it had run stably.
void own_failure(ServiceRecord& r, ReplicaState& x, std::time_t now, const std::string& why, std::time_t started) {
  bool stable = started > 0 && now - started >= kStableRunS;
  x.failures = stable ? 1 : x.failures + 1;
  x.not_before = now + backoff_s(kFirstBackoffS, x.failures);
  x.last_failure = why;
  ++x.restarts;
  bool was_looping = x.crash_looping;
  x.crash_looping = x.failures >= kCrashLoopFailures;
  if (x.crash_looping && !was_looping)
    event(r, now, "CrashLooping", x.index,
          "failed " + std::to_string(x.failures) + " times in a row, each within " + std::to_string(kStableRunS) +
              " s of its start (last: " + why + "); restarting it with back-off, up to " + std::to_string(kMaxBackoffS) +
              " s apart: fix the command or stop the service");
  event(r, now, "ReplicaFailed", x.index, why + "; next start in " + std::to_string(x.not_before - now) + " s");
}

void cancel(ServicePlan& plan, ServiceRecord& r, std::uint32_t id) {
  if (std::find(plan.cancels.begin(), plan.cancels.end(), id) == plan.cancels.end()) plan.cancels.push_back(id);
  r.cancelled.insert(id);
}

// Scaling, from the metric the ready replicas report.
void scale(ServiceRecord& r, const ServiceObservation& seen) {
  const auto& rule = r.spec.service.scaling;
  if (!rule) return;
  const std::time_t now = seen.now;
  double total = 0;
  int running = 0, reporting = 0;
  for (const auto& x : r.replicas)
    if (const auto* job = seen_job(seen, x.job_id); job && job->live && job->running) {
      ++running;
      if (job->ready && job->metric) {
        total += *job->metric;
        ++reporting;
      }
    }
  if (reporting == 0) return;
  int want = wanted_replicas(*rule, total, r.spec.service.min_replicas, r.spec.service.max_replicas);
  char figure[96];
  std::snprintf(figure, sizeof figure, "%s %g over %d ready replicas", rule->metric.c_str(), total, reporting);
  if (want > r.desired) {
    event(r, now, "ScaledUp", -1, std::to_string(r.desired) + " -> " + std::to_string(want) + " replicas: " + figure);
    r.desired = want;
    r.last_scaled = now;
    r.lower_demand_since = 0;
  } else if (want == r.desired || reporting < running) {
    // Down only on every running replica's figure: one that did not answer (overloaded, say:
    // then its readiness fails too) must not make the demand look lower; such a pass starts the
    // cooldown again.
    r.lower_demand_since = 0;
  } else {
    if (!r.lower_demand_since) {
      r.lower_demand_since = now;
      r.lower_demand_peak = want;
    }
    r.lower_demand_peak = std::max(r.lower_demand_peak, want);
    if (now - std::max(r.lower_demand_since, r.last_scaled) >= rule->cooldown_seconds) {
      int to = std::min(r.lower_demand_peak, r.desired);
      event(r, now, "ScaledDown", -1, std::to_string(r.desired) + " -> " + std::to_string(to) + " replicas: " + figure);
      r.desired = to;
      r.last_scaled = now;
      r.lower_demand_since = 0;
    }
  }
}

}  // namespace

int wanted_replicas(const ScalingRule& rule, double total, int min_replicas, int max_replicas) {
  double want = std::ceil(total / rule.target_per_replica - 1e-9);
  if (!(want >= min_replicas)) return min_replicas;  // NaN too
  if (want > max_replicas) return max_replicas;
  return static_cast<int>(want);
}

ServicePlan plan_service(ServiceRecord& r, const ServiceObservation& seen, int& start_budget) {
  ServicePlan plan;
  const std::time_t now = seen.now;
  if (r.stopped) {
    // Whatever of the service still runs (a cancel Slurm did not take, a job submitted as it
    // stopped) is cancelled.
    for (const auto& [id, job] : seen.jobs)
      if (job.live) cancel(plan, r, id);
    return plan;
  }

  scale(r, seen);

  // Replicas beyond the count wanted go, the highest first.
  std::sort(r.replicas.begin(), r.replicas.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  while (!r.replicas.empty() && r.replicas.back().index >= r.desired) {
    const ReplicaState& x = r.replicas.back();
    for (auto id : {x.job_id, x.replacement_job})
      if (id && !gone(seen_job(seen, id))) cancel(plan, r, id);
    event(r, now, "ReplicaRemoved", x.index, "the service scaled to " + std::to_string(r.desired) + " replicas");
    r.replicas.pop_back();
  }
  for (int i = 0; i < r.desired; ++i)
    if (std::none_of(r.replicas.begin(), r.replicas.end(), [i](const auto& x) { return x.index == i; }))
      r.replicas.push_back([i] {
        ReplicaState x;
        x.index = i;
        return x;
      }());
  std::sort(r.replicas.begin(), r.replicas.end(), [](const auto& a, const auto& b) { return a.index < b.index; });

  // Jobs of the service no replica holds (the bridge stopped between a submit and its record):
  // a replica whose recorded job is gone adopts one, with the port its mark names; the rest are
  // cancelled.
  for (const auto& [id, index] : seen.unclaimed) {
    const auto* job = seen_job(seen, id);
    if (gone(job) || r.cancelled.count(id)) continue;
    auto it = std::find_if(r.replicas.begin(), r.replicas.end(), [index](const auto& x) { return x.index == index; });
    if (it != r.replicas.end() && job->port > 0 && gone(seen_job(seen, it->job_id))) {
      if (it->job_id) it->last_job = it->job_id;
      it->job_id = id;
      it->port = job->port;
      it->ready_since = 0;
      event(r, now, "ReplicaAdopted", index, "job " + std::to_string(id) + " carries this replica's mark");
    } else {
      cancel(plan, r, id);
    }
  }

  std::vector<int> ports_planned;
  for (auto& x : r.replicas) {
    // A replacement that ended before it took over is a failure; one that is ready takes over.
    if (x.replacement_job) {
      const auto* repl = seen_job(seen, x.replacement_job);
      if (gone(repl)) {
        if (!r.cancelled.count(x.replacement_job)) {
          // Counted apart from the replica's own failures, which its old job's stable run clears.
          ++x.replacement_failures;
          x.not_before = now + backoff_s(kFirstReplacementBackoffS, x.replacement_failures);
          event(r, now, "ReplacementFailed", x.index,
                "the replacement job " + std::to_string(x.replacement_job) + " ended (" + ended_how(repl) + "); the next in " +
                    std::to_string(x.not_before - now) + " s, the old job serving meanwhile");
        }
        x.replacement_job = 0;
      } else if (!repl->running && x.spread && !x.spread_given_up && now - x.started_at >= kSpreadWaitS &&
                 repl->pending_reason != "Licenses") {
        cancel(plan, r, x.replacement_job);
        x.replacement_job = 0;
        x.spread_given_up = true;
        event(r, now, "SpreadGivenUp", x.index,
              "its replacement waited " + std::to_string(now - x.started_at) + " s for a node none of its siblings uses; the next goes anywhere");
      } else if (repl->ready || gone(seen_job(seen, x.job_id))) {
        if (x.job_id && !gone(seen_job(seen, x.job_id))) cancel(plan, r, x.job_id);
        event(r, now, "ReplicaReplaced", x.index,
              "job " + std::to_string(x.replacement_job) + (repl->node.empty() ? "" : " on " + repl->node) + " took over from job " +
                  std::to_string(x.job_id));
        x.last_job = x.job_id;
        x.job_id = x.replacement_job;
        x.port = x.replacement_port;
        x.replacement_job = 0;
        x.replacement_failures = 0;
        x.ready_since = repl->ready ? now : 0;
        continue;
      }
    }

    const auto* job = seen_job(seen, x.job_id);
    if (x.job_id && gone(job)) {
      if (r.cancelled.count(x.job_id)) {
        // Cancelled here (liveness, scale-down, replacement): accounted for when it was.
      } else if (job && job->node_fault) {
        if (!job->node.empty()) x.avoid_nodes = {job->node};
        if (job->start_time > 0 && now - job->start_time < kStableRunS) {
          // Lost within a minute of its start: maybe it took the node down (a GPU error it
          // caused, memory); it backs off as for a failure of its own.
          own_failure(r, x, now, "its node " + job->node + " failed " + std::to_string(now - job->start_time) + " s after its start",
                      job->start_time);
        } else {
          ++x.restarts;
          x.last_failure = "node " + job->node + " failed";
          event(r, now, "ReplicaLost", x.index, "its node " + job->node + " failed; starting it elsewhere");
        }
      } else {
        own_failure(r, x, now, ended_how(job), job ? job->start_time : 0);
      }
      x.last_job = x.job_id;
      x.job_id = 0;
      x.ready_since = 0;
    } else if (job && !job->running && x.spread && !x.spread_given_up && now - x.started_at >= kSpreadWaitS &&
               job->pending_reason != "Licenses") {
      // Kept off its siblings' nodes, it waits for others: it goes again, anywhere.
      cancel(plan, r, x.job_id);
      x.spread_given_up = true;
      x.last_job = x.job_id;
      x.job_id = 0;
      event(r, now, "SpreadGivenUp", x.index,
            "its job waited " + std::to_string(now - x.started_at) + " s for a node none of its siblings uses; starting it on any node");
    } else if (job) {
      if (job->running) x.spread_given_up = false;
      if (job->ready && !x.ready_since) {
        x.ready_since = now;
        event(r, now, "ReplicaReady", x.index, "ready on " + job->host + ":" + std::to_string(x.port));
      } else if (!job->ready) {
        x.ready_since = 0;
      }
      // Ready for a while: whatever failed before is over.
      if (x.ready_since && now - x.ready_since >= kStableRunS && (x.failures || x.crash_looping)) {
        x.failures = 0;
        x.crash_looping = false;
      }
      if (job->running && job->liveness_failures >= kLivenessFailures) {
        cancel(plan, r, x.job_id);
        own_failure(r, x, now, "liveness probe failed " + std::to_string(job->liveness_failures) + " times in a row on " + job->node,
                    job->start_time);
        // A replacement under way takes over at once; else the replica starts again after its back-off.
        x.last_job = x.job_id;
        x.job_id = x.replacement_job;
        x.port = x.replacement_port;
        x.replacement_job = 0;
        x.ready_since = 0;
      } else if (job->running && (job->node_unhealthy || job->ends_soon) && !x.replacement_job && now >= x.not_before &&
                 start_budget > 0) {
        if (x.unhealthy_job != x.job_id)
          event(r, now, job->node_unhealthy ? "NodeUnhealthy" : "TimeLimitNear", x.index,
                (job->node_unhealthy ? "node " + job->node + " is drained or down"
                                     : "job " + std::to_string(x.job_id) + " nears its time limit") +
                    "; starting a replacement, the old job goes once it is ready");
        x.unhealthy_job = x.job_id;
        if (job->node_unhealthy) x.avoid_nodes = {job->node};
        ReplicaStart s = start_of(r, x, seen, true, ports_planned);
        ports_planned.push_back(s.port);
        plan.starts.push_back(s);
        --start_budget;
      }
    }

    if (x.job_id == 0 && now >= x.not_before && start_budget > 0 &&
        !wait_for_placement(r, x, seen, !ports_planned.empty())) {
      ReplicaStart s = start_of(r, x, seen, false, ports_planned);
      ports_planned.push_back(s.port);
      plan.starts.push_back(s);
      --start_budget;
    }
  }

  // A job cancelled here that still runs (Slurm did not take the cancel) is cancelled again; the
  // others are remembered until Slurm forgets them.
  for (auto it = r.cancelled.begin(); it != r.cancelled.end();) {
    const auto* job = seen_job(seen, *it);
    if (job && job->live) cancel(plan, r, *it);
    bool planned = std::find(plan.cancels.begin(), plan.cancels.end(), *it) != plan.cancels.end();
    it = job || planned ? std::next(it) : r.cancelled.erase(it);
  }
  return plan;
}

void record_start(ServiceRecord& r, const ReplicaStart& s, std::uint32_t job_id, std::time_t now) {
  for (auto& x : r.replicas) {
    if (x.index != s.index) continue;
    x.start_failures = 0;
    x.started_at = now;
    x.spread = s.spread;
    if (s.replacement) {
      x.replacement_job = job_id;
      x.replacement_port = s.port;
    } else {
      x.job_id = job_id;
      x.port = s.port;
    }
    add_event(r, {now, "ReplicaStarted", s.index,
                  "job " + std::to_string(job_id) + (s.replacement ? " (a replacement)" : "") + ", port " + std::to_string(s.port)});
  }
}

void record_start_failed(ServiceRecord& r, const ReplicaStart& s, const std::string& error, std::time_t now) {
  for (auto& x : r.replicas) {
    if (x.index != s.index) continue;
    ++x.start_failures;
    x.not_before = now + backoff_s(kStartRetryS, x.start_failures);
    // Said once, not at every try; the next tries ask for any node.
    if (x.start_failures == 1)
      add_event(r, {now, "StartFailed", s.index,
                    "Slurm did not take the replica's job: " + error + "; trying again on any node, from " +
                        std::to_string(kStartRetryS) + " s apart up to " + std::to_string(kMaxBackoffS) + " s"});
  }
}

ServicePlan stop_service(ServiceRecord& r, const ServiceObservation& seen, std::time_t now) {
  ServicePlan plan;
  for (const auto& [id, job] : seen.jobs)
    if (job.live) cancel(plan, r, id);
  r.replicas.clear();
  r.stopped = true;
  add_event(r, {now, "Stopped", -1, "every replica's job cancelled"});
  return plan;
}

}  // namespace safe::bridge
