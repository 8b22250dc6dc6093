#include "kube-bridge/kube_observations.hpp"

#include <cstdlib>

#include "common/json_value.hpp"
#include "kube-bridge/kube_manifests.hpp"

namespace safe::bridge {
namespace {

Json parse(std::string_view body) { return json_take(json_loadb(body.data(), body.size(), 0, nullptr)); }

std::string jstr(const json_t* j, std::initializer_list<const char*> path) {
  for (const char* k : path) j = json_object_get(j, k);
  return json_is_string(j) ? json_string_value(j) : "";
}

std::string label(std::string_view name) { return std::string(kKubePrefix) + std::string(name); }

// The items of a list body, or why there are none.
Result<Json> list_items(std::string_view body, const char* what) {
  Json list = parse(body);
  if (!json_is_object(list.get()) || !json_is_array(json_object_get(list.get(), "items")))
    return Error{"the API server's answer is not a " + std::string(what)};
  return list;
}

// The value of the `type` condition whose status is True, if any.
const json_t* true_condition(const json_t* object, const char* type) {
  const json_t* conds = json_object_get(json_object_get(object, "status"), "conditions");
  for (std::size_t c = 0; c < json_array_size(conds); ++c) {
    const json_t* cond = json_array_get(conds, c);
    if (jstr(cond, {"type"}) == type && jstr(cond, {"status"}) == "True") return cond;
  }
  return nullptr;
}

KubeNodeState node_state(const json_t* n) {
  KubeNodeState s;
  s.name = jstr(n, {"metadata", "name"});
  const json_t* conds = json_object_get(json_object_get(n, "status"), "conditions");
  for (std::size_t c = 0; c < json_array_size(conds); ++c)
    if (jstr(json_array_get(conds, c), {"type"}) == "Ready") s.ready = jstr(json_array_get(conds, c), {"status"}) == "True";
  const json_t* labels = json_object_get(json_object_get(n, "metadata"), "labels");
  if (const json_t* v = json_object_get(labels, std::string(kUnhealthyKey).c_str()))
    s.mark = json_is_string(v) ? json_string_value(v) : "";
  const json_t* taints = json_object_get(json_object_get(n, "spec"), "taints");
  for (std::size_t t = 0; t < json_array_size(taints) && !s.mark; ++t)
    if (jstr(json_array_get(taints, t), {"key"}) == kUnhealthyKey) s.mark = jstr(json_array_get(taints, t), {"value"});
  return s;
}

PodObservation pod_observation(const json_t* p) {
  PodObservation o;
  o.name = jstr(p, {"metadata", "name"});
  o.node = jstr(p, {"spec", "nodeName"});
  o.phase = jstr(p, {"status", "phase"});
  const json_t* statuses = json_object_get(json_object_get(p, "status"), "containerStatuses");
  const json_t* terminated = json_object_get(json_object_get(json_array_get(statuses, 0), "state"), "terminated");
  if (json_is_integer(json_object_get(terminated, "exitCode")))
    o.exit_code = static_cast<int>(json_integer_value(json_object_get(terminated, "exitCode")));
  o.termination_reason = jstr(terminated, {"reason"});
  o.finished_at = jstr(terminated, {"finishedAt"});
  if (const json_t* c = true_condition(p, "DisruptionTarget")) o.disruption = jstr(c, {"reason"});
  return o;
}

}  // namespace

KubeNodeState parse_kube_node(std::string_view body) { return node_state(parse(body).get()); }

Result<std::vector<KubeNodeState>> parse_kube_node_list(std::string_view body) {
  auto list = list_items(body, "NodeList");
  if (!list) return Error{list.error()};
  std::vector<KubeNodeState> out;
  const json_t* items = json_object_get(list->get(), "items");
  for (std::size_t i = 0; i < json_array_size(items); ++i) out.push_back(node_state(json_array_get(items, i)));
  return out;
}

Result<std::vector<PodObservation>> parse_pod_list(std::string_view body) {
  auto list = list_items(body, "PodList");
  if (!list) return Error{list.error()};
  std::vector<PodObservation> out;
  const json_t* items = json_object_get(list->get(), "items");
  for (std::size_t i = 0; i < json_array_size(items); ++i) out.push_back(pod_observation(json_array_get(items, i)));
  return out;
}

void add_node_states(std::vector<PodObservation>& pods, const std::map<std::string, KubeNodeState>& nodes) {
  for (PodObservation& o : pods) {
    if (o.node.empty()) continue;
    auto it = nodes.find(o.node);
    if (it == nodes.end()) {
      o.node_not_ready = true;
      continue;
    }
    // A node that reports no Ready condition is not known to be down.
    o.node_not_ready = it->second.ready.has_value() && !*it->second.ready;
    o.node_mark = it->second.mark;
  }
}

JobObservation parse_job_observation(int status, std::string_view body) {
  JobObservation seen;
  seen.gone = status == 404;
  if (seen.gone) return seen;
  Json job = parse(body);
  if (const json_t* c = true_condition(job.get(), "Failed")) seen.deadline_exceeded = jstr(c, {"reason"}) == "DeadlineExceeded";
  return seen;
}

bool job_is_suspended(std::string_view body) {
  return json_is_true(json_object_get(json_object_get(parse(body).get(), "spec"), "suspend"));
}

bool job_is_attempt(std::string_view body, const std::string& workload, int attempt) {
  Json job = parse(body);
  const json_t* labels = json_object_get(json_object_get(job.get(), "metadata"), "labels");
  const std::string prefix(kKubePrefix);
  return json_string_or(labels, (prefix + "workload").c_str()) == workload &&
         json_string_or(labels, (prefix + "attempt").c_str()) == std::to_string(attempt);
}

std::string log_pod(std::string_view pod_list) {
  Json list = parse(pod_list);
  const json_t* items = json_object_get(list.get(), "items");
  std::string pod;
  for (std::size_t i = 0; i < json_array_size(items); ++i) {
    const json_t* p = json_array_get(items, i);
    std::string index = jstr(p, {"metadata", "annotations", "batch.kubernetes.io/job-completion-index"});
    if (pod.empty() || index == "0") pod = jstr(p, {"metadata", "name"});
  }
  return pod;
}

std::vector<std::string> running_pods(std::string_view pod_list) {
  Json list = parse(pod_list);
  const json_t* items = json_object_get(list.get(), "items");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < json_array_size(items); ++i) {
    const json_t* p = json_array_get(items, i);
    if (jstr(p, {"status", "phase"}) != "Running" || json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
      continue;
    out.push_back(jstr(p, {"metadata", "name"}));
  }
  return out;
}

KubeWatchEvent parse_watch_event(std::string_view line) {
  Json ev = parse(line);
  KubeWatchEvent out;
  out.type = jstr(ev.get(), {"type"});
  const json_t* obj = json_object_get(ev.get(), "object");
  out.expired = out.type == "ERROR" && json_integer_value(json_object_get(obj, "code")) == 410;
  out.resource_version = jstr(obj, {"metadata", "resourceVersion"});
  out.workload = jstr(obj, {"metadata", "labels", label("workload").c_str()});
  return out;
}

std::string list_resource_version(std::string_view body) { return jstr(parse(body).get(), {"metadata", "resourceVersion"}); }

Result<RecoveredWorkloads> parse_recovered_workloads(std::string_view job_list) {
  auto list = list_items(job_list, "JobList");
  if (!list) return Error{list.error()};
  RecoveredWorkloads out;
  const json_t* items = json_object_get(list->get(), "items");
  const std::string workload_label = label("workload"), attempt_label = label("attempt");
  for (std::size_t i = 0; i < json_array_size(items); ++i) {
    const json_t* job = json_array_get(items, i);
    std::string name = jstr(job, {"metadata", "labels", workload_label.c_str()});
    int attempt = std::atoi(jstr(job, {"metadata", "labels", attempt_label.c_str()}).c_str());
    if (name.empty() || attempt < 1) continue;
    out.attempts[name].push_back(attempt);
    auto w = parse_kube_workload_record(jstr(job, {"metadata", "annotations", std::string(kRecordAnnotation).c_str()}));
    if (!w) {
      out.unusable.push_back("Job " + jstr(job, {"metadata", "name"}) + ": " + w.error());
      continue;
    }
    // The record that counts is the one on the Job that holds it: a failover in progress keeps
    // it on the draining attempt's Job until the next attempt's Job exists.
    int holder = w->draining_attempt ? w->draining_attempt : w->attempt;
    auto it = out.workloads.find(name);
    int held = it == out.workloads.end() ? 0 : (it->second.draining_attempt ? it->second.draining_attempt : it->second.attempt);
    if (holder == attempt && holder > held) out.workloads[name] = std::move(*w);
  }
  return out;
}

std::string kube_status_message(std::string_view body) { return jstr(parse(body).get(), {"message"}); }

}  // namespace safe::bridge
