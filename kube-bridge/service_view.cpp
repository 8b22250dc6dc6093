#include "kube-bridge/service_view.hpp"

#include "kube-bridge/workload_view.hpp"

namespace safe::bridge {
namespace {

const ReplicaJobObservation* seen_job(const ServiceObservation& seen, std::uint32_t id) {
  auto it = id ? seen.jobs.find(id) : seen.jobs.end();
  return it == seen.jobs.end() ? nullptr : &it->second;
}

// What the replica is doing, in a word: Ready, Starting, Pending, BackingOff, Waiting.
std::string replica_state(const ReplicaState& x, const ReplicaJobObservation* job, std::time_t now) {
  if (job && job->live) {
    if (job->ready) return "Ready";
    return job->running ? "Starting" : "Pending";
  }
  return x.not_before > now ? "BackingOff" : "Waiting";
}

}  // namespace

WorkloadPhase service_phase(const ServiceRecord& r, const ServiceObservation& seen) {
  if (r.stopped) return WorkloadPhase::stopped;
  for (const auto& x : r.replicas)
    for (auto id : {x.job_id, x.replacement_job})
      if (const auto* job = seen_job(seen, id); job && job->live && job->ready) return WorkloadPhase::running;
  return WorkloadPhase::pending;
}

Json render_service(const ServiceRecord& r, const ServiceObservation& seen) {
  Json j = json_take(json_object());
  json_t* w = j.get();
  json_set(w, "id", json_str("svc-" + r.spec.name));
  json_set(w, "name", json_str(r.spec.name));
  json_set(w, "target", json_string("slurm"));
  json_set(w, "kind", json_string("service"));
  json_set(w, "user", json_str(r.user));
  json_set(w, "workspace", r.spec.options.workspace ? json_str(*r.spec.options.workspace) : json_null());
  json_set(w, "phase", json_str(to_string(service_phase(r, seen))));
  json_set(w, "submitTime", time_json(r.created));
  int ready = 0;
  json_t* items = json_array();
  for (const auto& x : r.replicas) {
    const auto* job = seen_job(seen, x.job_id);
    json_t* e = json_object();
    json_set(e, "replica", json_integer(x.index));
    json_set(e, "state", json_str(replica_state(x, job, seen.now)));
    json_set(e, "ready", json_boolean(job && job->live && job->ready));
    if (job && job->live && job->ready) ++ready;
    json_set(e, "jobId", x.job_id ? json_integer(x.job_id) : json_null());
    json_set(e, "node", job && !job->node.empty() ? json_str(job->node) : json_null());
    json_set(e, "port", json_integer(x.job_id ? x.port : 0));
    if (job && !job->pending_reason.empty() && !job->running) json_set(e, "reason", json_str(job->pending_reason));
    if (x.replacement_job) json_set(e, "replacementJobId", json_integer(x.replacement_job));
    json_set(e, "restarts", json_integer(x.restarts));
    json_set(e, "crashLooping", json_boolean(x.crash_looping));
    json_set(e, "lastFailure", x.last_failure.empty() ? json_null() : json_str(x.last_failure));
    json_set(e, "nextStart", x.job_id == 0 && x.not_before > seen.now ? time_json(x.not_before) : json_null());
    json_array_append_new(items, e);
  }
  json_t* replicas = json_object();
  json_set(replicas, "desired", json_integer(r.stopped ? 0 : r.desired));
  json_set(replicas, "ready", json_integer(ready));
  json_set(replicas, "min", json_integer(r.spec.service.min_replicas));
  json_set(replicas, "max", json_integer(r.spec.service.max_replicas));
  json_set(replicas, "items", items);
  json_set(w, "replicas", replicas);
  json_set(w, "port", json_integer(r.spec.service.port));
  json_t* labels = json_object();
  for (const auto& [k, v] : r.spec.labels) json_set(labels, k.c_str(), json_str(v));
  json_set(w, "labels", labels);
  return j;
}

Json render_endpoints(const ServiceRecord& r, const ServiceObservation& seen) {
  Json j = json_take(json_object());
  json_set(j.get(), "service", json_str(r.spec.name));
  json_t* list = json_array();
  for (const auto& x : r.replicas)
    for (auto [id, port] : {std::pair{x.job_id, x.port}, std::pair{x.replacement_job, x.replacement_port}}) {
      const auto* job = seen_job(seen, id);
      if (!job || !job->live || !job->running || job->host.empty()) continue;
      json_t* e = json_object();
      json_set(e, "host", json_str(job->host));
      json_set(e, "port", json_integer(port));
      json_set(e, "ready", json_boolean(job->ready));
      json_set(e, "replica", json_integer(x.index));
      json_array_append_new(list, e);
    }
  json_set(j.get(), "endpoints", list);
  return j;
}

}  // namespace safe::bridge
