#include "kube-bridge/service_plan.hpp"

#include <algorithm>
#include <cmath>
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

int backoff_s(int failures) {
  int s = kFirstBackoffS;
  for (int i = 1; i < failures && s < kMaxBackoffS; ++i) s *= 2;
  return std::min(s, kMaxBackoffS);
}

// The port for a new job of the service: the spec's, or where replicas may share a host, the
// spec's plus the lowest offset no live job of the service holds.
int free_port(const ServiceRecord& r, bool shared_hosts, const std::vector<int>& taken_now) {
  int base = r.spec.service.port;
  if (!shared_hosts) return base;
  std::set<int> taken(taken_now.begin(), taken_now.end());
  for (const auto& x : r.replicas) {
    if (x.job_id) taken.insert(x.port);
    if (x.replacement_job) taken.insert(x.replacement_port);
  }
  int port = base;
  while (taken.count(port) && port < 65535) ++port;
  return port;
}

std::string ended_how(const ReplicaJobObservation* job) {
  if (!job) return "its job left Slurm";
  return "exit code " + std::to_string(job->exit_code) + (job->node.empty() ? "" : " on " + job->node);
}

// The replica's own failure: back off, and count towards crash-looping unless it had run stably.
void own_failure(ServiceRecord& r, ReplicaState& x, std::time_t now, const std::string& why, std::time_t started) {
  bool stable = started > 0 && now - started >= kStableRunS;
  x.failures = stable ? 1 : x.failures + 1;
  x.not_before = now + backoff_s(x.failures);
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
    for (const auto& [id, index] : seen.unclaimed)
      if (!gone(seen_job(seen, id)) && r.cancelled.insert(id).second) plan.cancels.push_back(id);
    return plan;
  }

  // Scaling, from the metric the ready replicas report.
  if (const auto& rule = r.spec.service.scaling) {
    double total = 0;
    int reporting = 0;
    for (const auto& x : r.replicas)
      if (const auto* job = seen_job(seen, x.job_id); job && job->ready && job->metric) {
        total += *job->metric;
        ++reporting;
      }
    if (reporting > 0) {
      int want = wanted_replicas(*rule, total, r.spec.service.min_replicas, r.spec.service.max_replicas);
      char figure[64];
      std::snprintf(figure, sizeof figure, "%s %g over %d ready replicas", rule->metric.c_str(), total, reporting);
      if (want > r.desired) {
        event(r, now, "ScaledUp", -1, std::to_string(r.desired) + " -> " + std::to_string(want) + " replicas: " + figure);
        r.desired = want;
        r.last_scaled = now;
        r.lower_demand_since = 0;
      } else if (want < r.desired) {
        if (!r.lower_demand_since) r.lower_demand_since = now;
        std::time_t since = std::max(r.lower_demand_since, r.last_scaled);
        if (now - since >= rule->cooldown_seconds) {
          event(r, now, "ScaledDown", -1, std::to_string(r.desired) + " -> " + std::to_string(want) + " replicas: " + figure);
          r.desired = want;
          r.last_scaled = now;
          r.lower_demand_since = 0;
        }
      } else {
        r.lower_demand_since = 0;
      }
    }
  }

  // Replicas beyond the count wanted go, the highest first.
  std::sort(r.replicas.begin(), r.replicas.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  while (!r.replicas.empty() && r.replicas.back().index >= r.desired) {
    const ReplicaState& x = r.replicas.back();
    for (auto id : {x.job_id, x.replacement_job})
      if (id && !gone(seen_job(seen, id))) {
        plan.cancels.push_back(id);
        r.cancelled.insert(id);
      }
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
  // a replica without a job adopts one, the rest are cancelled.
  for (const auto& [id, index] : seen.unclaimed) {
    const auto* job = seen_job(seen, id);
    if (gone(job) || r.cancelled.count(id)) continue;
    auto it = std::find_if(r.replicas.begin(), r.replicas.end(), [index](const auto& x) { return x.index == index; });
    if (it != r.replicas.end() && it->job_id == 0) {
      it->job_id = id;
      event(r, now, "ReplicaAdopted", index, "job " + std::to_string(id) + " carries this replica's mark");
    } else {
      plan.cancels.push_back(id);
      r.cancelled.insert(id);
    }
  }

  std::vector<int> ports_planned;
  for (auto& x : r.replicas) {
    // A replacement that ended before it took over is dropped; one that is ready takes over.
    if (x.replacement_job) {
      const auto* repl = seen_job(seen, x.replacement_job);
      if (gone(repl)) {
        if (!r.cancelled.count(x.replacement_job))
          event(r, now, "ReplacementFailed", x.index, "the replacement job " + std::to_string(x.replacement_job) + " ended: " + ended_how(repl));
        x.replacement_job = 0;
      } else if (repl->ready || gone(seen_job(seen, x.job_id))) {
        if (x.job_id && !gone(seen_job(seen, x.job_id))) {
          plan.cancels.push_back(x.job_id);
          r.cancelled.insert(x.job_id);
        }
        event(r, now, "ReplicaReplaced", x.index,
              "job " + std::to_string(x.replacement_job) + (repl->node.empty() ? "" : " on " + repl->node) + " took over from job " +
                  std::to_string(x.job_id));
        x.job_id = x.replacement_job;
        x.port = x.replacement_port;
        x.replacement_job = 0;
        x.ready_since = repl->ready ? now : 0;
        continue;
      }
    }

    const auto* job = seen_job(seen, x.job_id);
    if (x.job_id && gone(job)) {
      if (r.cancelled.count(x.job_id)) {
        // Cancelled here (liveness, scale-down, replacement): accounted for when it was.
      } else if (job && job->node_fault) {
        if (!job->node.empty() && std::find(x.avoid_nodes.begin(), x.avoid_nodes.end(), job->node) == x.avoid_nodes.end())
          x.avoid_nodes.push_back(job->node);
        ++x.restarts;
        x.last_failure = "node " + job->node + " failed";
        event(r, now, "ReplicaLost", x.index, "its node " + job->node + " failed; starting it elsewhere");
      } else {
        own_failure(r, x, now, ended_how(job), job ? job->start_time : 0);
      }
      x.job_id = 0;
      x.ready_since = 0;
    } else if (job) {
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
        plan.cancels.push_back(x.job_id);
        r.cancelled.insert(x.job_id);
        own_failure(r, x, now, "liveness probe failed " + std::to_string(job->liveness_failures) + " times in a row on " + job->node,
                    job->start_time);
        x.job_id = 0;
        x.ready_since = 0;
        x.replacement_job = 0;  // (none: a replacement is dropped above once its old job is gone)
      } else if (job->running && job->node_unhealthy && !x.replacement_job && start_budget > 0) {
        if (std::find(x.avoid_nodes.begin(), x.avoid_nodes.end(), job->node) == x.avoid_nodes.end())
          x.avoid_nodes.push_back(job->node);
        ReplicaStart s{x.index, free_port(r, seen.shared_hosts, ports_planned), true, x.avoid_nodes};
        ports_planned.push_back(s.port);
        plan.starts.push_back(s);
        --start_budget;
        event(r, now, "NodeUnhealthy", x.index,
              "node " + job->node + " is drained or down; starting a replacement, the old job goes once it is ready");
      }
    }

    if (x.job_id == 0 && now >= x.not_before && start_budget > 0) {
      ReplicaStart s{x.index, free_port(r, seen.shared_hosts, ports_planned), false, x.avoid_nodes};
      ports_planned.push_back(s.port);
      plan.starts.push_back(s);
      --start_budget;
    }
  }

  // Jobs cancelled here are remembered until Slurm forgets them.
  for (auto it = r.cancelled.begin(); it != r.cancelled.end();)
    it = seen.jobs.count(*it) || std::find(plan.cancels.begin(), plan.cancels.end(), *it) != plan.cancels.end() ? std::next(it)
                                                                                                                 : r.cancelled.erase(it);
  return plan;
}

void record_start(ServiceRecord& r, const ReplicaStart& s, std::uint32_t job_id, std::time_t now) {
  for (auto& x : r.replicas) {
    if (x.index != s.index) continue;
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
    x.not_before = now + 10;
    add_event(r, {now, "StartFailed", s.index, "Slurm did not take the replica's job: " + error + "; trying again in 10 s"});
  }
}

ServicePlan stop_service(ServiceRecord& r, std::time_t now) {
  ServicePlan plan;
  for (const auto& x : r.replicas)
    for (auto id : {x.job_id, x.replacement_job})
      if (id) {
        plan.cancels.push_back(id);
        r.cancelled.insert(id);
      }
  r.replicas.clear();
  r.stopped = true;
  add_event(r, {now, "Stopped", -1, "every replica's job cancelled"});
  return plan;
}

}  // namespace safe::bridge
