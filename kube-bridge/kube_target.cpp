#include "kube-bridge/kube_target.hpp"

#include <chrono>
#include <thread>

#include "common/kube_failover.hpp"
#include "kube-bridge/json_value.hpp"
#include "kube-bridge/kube_manifests.hpp"

namespace safe::bridge {
namespace {

Json parse(const std::string& body) { return json_take(json_loadb(body.data(), body.size(), 0, nullptr)); }

std::string jstr(const json_t* j, std::initializer_list<const char*> path) {
  for (const char* k : path) j = json_object_get(j, k);
  return json_is_string(j) ? json_string_value(j) : "";
}

std::string status_message(const KubeResponse& r) {
  if (r.status == 0) return r.error;
  Json j = parse(r.body);
  std::string m = jstr(j.get(), {"message"});
  return "HTTP " + std::to_string(r.status) + (m.empty() ? "" : ": " + m);
}

}  // namespace

KubeTarget::~KubeTarget() { stopping_ = true; }

bool KubeTarget::submit_attempt(KubeWorkload& w, std::string& error) {
  KubeWorkloadContext ctx;
  ctx.kube = config_;
  ctx.settings = w.settings;
  ctx.user = w.user;
  ctx.attempt = w.attempt;
  ctx.avoid_nodes = w.avoid_nodes;
  const std::string ns = url_escape(config_.namespace_);
  KubeResponse svc = client_.request("POST", "/api/v1/namespaces/" + ns + "/services",
                                     json_text(kube_service_manifest(w.spec, ctx).get()));
  if (svc.status != 201 && svc.status != 409) return error = "creating the Service: " + status_message(svc), false;
  KubeResponse job = client_.request("POST", "/apis/batch/v1/namespaces/" + ns + "/jobs",
                                     json_text(kube_job_manifest(w.spec, ctx).get()));
  if (job.status != 201) return error = "creating the Job: " + status_message(job), false;
  return true;
}

void KubeTarget::delete_attempt(const KubeWorkload& w) {
  const std::string ns = url_escape(config_.namespace_);
  const std::string name = kube_object_name(w.spec.name, w.attempt);
  // Background propagation: the Job's pods go with it.
  client_.request("DELETE", "/apis/batch/v1/namespaces/" + ns + "/jobs/" + name + "?propagationPolicy=Background",
                  R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})");
  client_.request("DELETE", "/api/v1/namespaces/" + ns + "/services/" + name);
}

std::optional<std::pair<int, std::string>> KubeTarget::create(const WorkloadSpec& spec, const JobSettings& settings,
                                                              const std::string& user, uid_t uid) {
  std::lock_guard lock(mutex_);
  auto it = workloads_.find(spec.name);
  if (it != workloads_.end() && !it->second.deleted)
    return std::pair(409, "a Kubernetes workload named '" + spec.name + "' exists; choose another name or delete it first");
  KubeWorkload w;
  w.spec = spec;
  w.settings = settings;
  w.user = user;
  w.uid = uid;
  w.avoid_nodes = spec.excluded_nodes;
  w.submit_time = std::time(nullptr);
  std::string error;
  if (!submit_attempt(w, error))
    return std::pair(502, "safe: the Kubernetes API refused the workload (" + error + "); check the bridge's RBAC and namespace");
  w.events.push_back({"Submitted", w.submit_time, 1, "Job " + kube_object_name(spec.name, 1) + " created"});
  workloads_[spec.name] = std::move(w);
  return std::nullopt;
}

std::optional<KubeWorkload> KubeTarget::get(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = workloads_.find(name);
  if (it == workloads_.end() || it->second.deleted) return std::nullopt;
  return it->second;
}

std::vector<KubeWorkload> KubeTarget::list() {
  std::lock_guard lock(mutex_);
  std::vector<KubeWorkload> out;
  for (const auto& [n, w] : workloads_)
    if (!w.deleted) out.push_back(w);
  return out;
}

bool KubeTarget::stop(const std::string& name, bool remove, std::string& error) {
  std::lock_guard lock(mutex_);
  auto it = workloads_.find(name);
  if (it == workloads_.end() || it->second.deleted) return error = "no such workload", false;
  KubeWorkload& w = it->second;
  if (w.phase == "Pending" || w.phase == "Running") {
    delete_attempt(w);
    w.phase = "Stopped";
    w.events.push_back({"Stopped", std::time(nullptr), w.attempt, "stopped through the API"});
  }
  if (remove) {
    delete_attempt(w);
    w.deleted = true;
  }
  return true;
}

std::optional<std::string> KubeTarget::logs(const std::string& name, int attempt, std::string& error) {
  int n = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = workloads_.find(name);
    if (it == workloads_.end() || it->second.deleted) return error = "no such workload", std::nullopt;
    n = attempt > 0 ? attempt : it->second.attempt;
    if (n > it->second.attempt) return error = "attempt " + std::to_string(n) + " has not run", std::nullopt;
  }
  const std::string ns = url_escape(config_.namespace_);
  std::string selector = url_escape(std::string(kKubePrefix) + "workload=" + name + "," + std::string(kKubePrefix) +
                                    "attempt=" + std::to_string(n));
  KubeResponse pods = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + selector);
  if (pods.status != 200) return error = "listing pods: " + status_message(pods), std::nullopt;
  Json list = parse(pods.body);
  json_t* items = json_object_get(list.get(), "items");
  std::string pod;
  for (std::size_t i = 0; i < json_array_size(items); ++i) {
    json_t* p = json_array_get(items, i);
    std::string index = jstr(p, {"metadata", "annotations", "batch.kubernetes.io/job-completion-index"});
    if (pod.empty() || index == "0") pod = jstr(p, {"metadata", "name"});
  }
  if (pod.empty()) return error = "the attempt has no pods (any more)", std::nullopt;
  KubeResponse log = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods/" + url_escape(pod) + "/log");
  if (log.status != 200) return error = "reading the log of pod " + pod + ": " + status_message(log), std::nullopt;
  return log.body;
}

std::vector<KubeTarget::NodeView> KubeTarget::nodes(std::string& error) {
  std::vector<NodeView> out;
  KubeResponse r = client_.request("GET", "/api/v1/nodes");
  if (r.status != 200) {
    error = status_message(r);
    return out;
  }
  Json list = parse(r.body);
  json_t* items = json_object_get(list.get(), "items");
  for (std::size_t i = 0; i < json_array_size(items); ++i) {
    json_t* n = json_array_get(items, i);
    NodeView v;
    v.name = jstr(n, {"metadata", "name"});
    json_t* conds = json_object_get(json_object_get(n, "status"), "conditions");
    for (std::size_t c = 0; c < json_array_size(conds); ++c)
      if (jstr(json_array_get(conds, c), {"type"}) == "Ready") v.ready = jstr(json_array_get(conds, c), {"status"}) == "True";
    v.marked_unhealthy = json_object_get(json_object_get(json_object_get(n, "metadata"), "labels"), std::string(kUnhealthyKey).c_str());
    out.push_back(v);
  }
  return out;
}

void KubeTarget::reconcile(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = workloads_.find(name);
  if (it == workloads_.end() || it->second.deleted) return;
  KubeWorkload& w = it->second;
  if (w.phase != "Pending" && w.phase != "Running") return;
  const std::string ns = url_escape(config_.namespace_);
  std::string selector = url_escape(std::string(kKubePrefix) + "workload=" + name + "," + std::string(kKubePrefix) +
                                    "attempt=" + std::to_string(w.attempt));
  KubeResponse pods = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + selector);
  if (pods.status != 200) return;
  Json list = parse(pods.body);
  json_t* items = json_object_get(list.get(), "items");
  std::vector<PodObservation> observed;
  std::map<std::string, std::pair<bool, bool>> node_state;  // name -> (not ready, marked)
  std::string nodes;
  for (std::size_t i = 0; i < json_array_size(items); ++i) {
    json_t* p = json_array_get(items, i);
    PodObservation o;
    o.name = jstr(p, {"metadata", "name"});
    o.node = jstr(p, {"spec", "nodeName"});
    o.phase = jstr(p, {"status", "phase"});
    json_t* statuses = json_object_get(json_object_get(p, "status"), "containerStatuses");
    json_t* terminated = json_object_get(json_object_get(json_array_get(statuses, 0), "state"), "terminated");
    if (json_is_integer(json_object_get(terminated, "exitCode")))
      o.exit_code = static_cast<int>(json_integer_value(json_object_get(terminated, "exitCode")));
    json_t* conds = json_object_get(json_object_get(p, "status"), "conditions");
    for (std::size_t c = 0; c < json_array_size(conds); ++c)
      if (jstr(json_array_get(conds, c), {"type"}) == "DisruptionTarget" && jstr(json_array_get(conds, c), {"status"}) == "True")
        o.disruption_target = true;
    if (!o.node.empty()) {
      if (!node_state.count(o.node)) {
        KubeResponse nr = client_.request("GET", "/api/v1/nodes/" + url_escape(o.node));
        Json n = parse(nr.body);
        bool not_ready = nr.status == 404;  // a node that is gone took its pods with it
        json_t* nconds = json_object_get(json_object_get(n.get(), "status"), "conditions");
        for (std::size_t c = 0; c < json_array_size(nconds); ++c)
          if (jstr(json_array_get(nconds, c), {"type"}) == "Ready") not_ready = jstr(json_array_get(nconds, c), {"status"}) != "True";
        bool marked = json_object_get(json_object_get(json_object_get(n.get(), "metadata"), "labels"), std::string(kUnhealthyKey).c_str());
        json_t* taints = json_object_get(json_object_get(n.get(), "spec"), "taints");
        for (std::size_t t = 0; t < json_array_size(taints); ++t) marked = marked || jstr(json_array_get(taints, t), {"key"}) == kUnhealthyKey;
        node_state[o.node] = {not_ready, marked};
      }
      o.node_not_ready = node_state[o.node].first;
      o.node_marked_unhealthy = node_state[o.node].second;
      nodes += (nodes.empty() ? "" : ",") + o.node;
    }
    observed.push_back(o);
  }
  w.nodes = nodes;
  KubeDecision d = decide_kube_workload(observed, w.spec.nodes, w.attempt, w.settings.retries);
  std::time_t now = std::time(nullptr);
  std::string error;
  switch (d.action) {
    case KubeAction::wait: {
      bool running = false;
      for (const auto& o : observed) running = running || o.phase == "Running";
      if (running && w.phase != "Running") w.events.push_back({"Running", now, w.attempt, "pods running on " + nodes});
      w.phase = running ? "Running" : "Pending";
      break;
    }
    case KubeAction::succeeded:
      w.phase = "Succeeded";
      w.events.push_back({"Succeeded", now, w.attempt, d.message});
      break;
    case KubeAction::fail_user_error:
      w.phase = "Failed";
      w.events.push_back({"Failed", now, w.attempt, d.message});
      break;
    case KubeAction::fail_retries_exhausted:
      mark_node_unhealthy(client_, d.bad_node, "node_fault", false, error);
      delete_attempt(w);
      w.phase = "Failed";
      w.events.push_back({"Failed", now, w.attempt, d.message});
      break;
    case KubeAction::failover:
      if (!mark_node_unhealthy(client_, d.bad_node, "node_fault", false, error))
        w.events.push_back({"Warning", now, w.attempt, error});
      delete_attempt(w);
      w.avoid_nodes.push_back(d.bad_node);
      w.attempt += 1;
      w.phase = "Pending";
      w.events.push_back({"Failover", now, w.attempt, d.message + "; attempt " + std::to_string(w.attempt)});
      if (!submit_attempt(w, error)) {
        w.phase = "Failed";
        w.events.push_back({"Failed", now, w.attempt, "recreating the Job failed: " + error});
      }
      break;
  }
}

void KubeTarget::reconcile_all() {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [n, w] : workloads_)
      if (!w.deleted && (w.phase == "Pending" || w.phase == "Running")) names.push_back(n);
  }
  for (const auto& n : names) reconcile(n);
}

// List, then watch from the list's resourceVersion; after a disconnect resume from the last
// version seen; after 410 Gone (the version was compacted away) list again.
void KubeTarget::watch_loop(const std::string& collection, bool pods) {
  std::string rv;
  std::string selector = pods ? "&labelSelector=" + url_escape(std::string(kKubePrefix) + "workload") : "";
  auto last_resync = std::chrono::steady_clock::now();
  while (!stopping_) {
    if (rv.empty()) {
      KubeResponse r = client_.request("GET", collection + (pods ? "?" + selector.substr(1) : ""));
      if (r.status != 200) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        continue;
      }
      rv = jstr(parse(r.body).get(), {"metadata", "resourceVersion"});
      reconcile_all();
    }
    KubeResponse r = client_.watch(collection + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=" +
                                       url_escape(rv) + selector,
                                   [&](std::string_view line) {
                                     Json ev = json_take(json_loadb(line.data(), line.size(), 0, nullptr));
                                     std::string type = jstr(ev.get(), {"type"});
                                     json_t* obj = json_object_get(ev.get(), "object");
                                     if (type == "ERROR") {
                                       if (json_integer_value(json_object_get(obj, "code")) == 410) rv.clear();
                                       return false;
                                     }
                                     std::string v = jstr(obj, {"metadata", "resourceVersion"});
                                     if (!v.empty()) rv = v;
                                     if (type == "BOOKMARK") return !stopping_;
                                     if (pods) {
                                       std::string w = jstr(obj, {"metadata", "labels", (std::string(kKubePrefix) + "workload").c_str()});
                                       if (!w.empty()) reconcile(w);
                                     } else {
                                       reconcile_all();
                                     }
                                     return !stopping_.load();
                                   });
    if (r.status == 410) rv.clear();
    watch_restarts_++;
    if (r.status == 0 || r.status >= 500) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // Informer-style resync: catches anything a watch could not express (none expected).
    if (std::chrono::steady_clock::now() - last_resync > std::chrono::seconds(60)) {
      last_resync = std::chrono::steady_clock::now();
      reconcile_all();
    }
  }
}

void KubeTarget::start() {
  const std::string ns = url_escape(config_.namespace_);
  std::thread([this, ns] { watch_loop("/api/v1/namespaces/" + ns + "/pods", true); }).detach();
  std::thread([this] { watch_loop("/api/v1/nodes", false); }).detach();
}

}  // namespace safe::bridge
