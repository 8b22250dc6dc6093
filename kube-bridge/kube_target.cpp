#include "kube-bridge/kube_target.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <thread>

#include "common/json_value.hpp"
#include "kube-bridge/kube_manifests.hpp"
#include "kube-bridge/kube_node_mark.hpp"

namespace safe::bridge {
namespace {

// Kubernetes allows 256 KiB of annotations per object; the record stays well below.
constexpr std::size_t kMaxRecordBytes = 192 * 1024;

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

std::string label(std::string_view name) { return std::string(kKubePrefix) + std::string(name); }

std::string attempt_selector(const std::string& workload, int attempt) {
  return url_escape(label("workload") + "=" + workload + "," + label("attempt") + "=" + std::to_string(attempt));
}

bool active(const PodObservation& p) { return p.phase != "Succeeded" && p.phase != "Failed"; }

struct NodeState {
  bool not_ready = false;
  std::optional<std::string> mark;
};

NodeState observe_node(KubeClient& client, const std::string& node) {
  KubeResponse r = client.request("GET", "/api/v1/nodes/" + url_escape(node));
  NodeState s;
  s.not_ready = r.status == 404;  // a node that is gone took its pods with it
  Json n = parse(r.body);
  json_t* conds = json_object_get(json_object_get(n.get(), "status"), "conditions");
  for (std::size_t c = 0; c < json_array_size(conds); ++c)
    if (jstr(json_array_get(conds, c), {"type"}) == "Ready") s.not_ready = jstr(json_array_get(conds, c), {"status"}) != "True";
  json_t* labels = json_object_get(json_object_get(n.get(), "metadata"), "labels");
  if (json_t* v = json_object_get(labels, std::string(kUnhealthyKey).c_str())) s.mark = json_is_string(v) ? json_string_value(v) : "";
  json_t* taints = json_object_get(json_object_get(n.get(), "spec"), "taints");
  for (std::size_t t = 0; t < json_array_size(taints); ++t)
    if (jstr(json_array_get(taints, t), {"key"}) == kUnhealthyKey && !s.mark) s.mark = jstr(json_array_get(taints, t), {"value"});
  return s;
}

}  // namespace

KubeTarget::KubeTarget(const SafeConfig& config, KubeClient& client)
    : kube_(config.kube_bridge.kubernetes), failover_(config.failover), checkpoint_(config.checkpoint), client_(client) {}

KubeTarget::~KubeTarget() {
  for (auto& t : threads_) t.request_stop();
  threads_.clear();  // joins them, while everything they use still exists
}

bool KubeTarget::pause(const std::stop_token& stop, std::chrono::milliseconds d) {
  std::unique_lock lock(wake_mutex_);
  wake_.wait_for(lock, stop, d, [] { return false; });
  return !stop.stop_requested();
}

bool KubeTarget::wait_recovered(const std::stop_token& stop) {
  std::unique_lock lock(wake_mutex_);
  return wake_.wait(lock, stop, [this] { return recovered_.load(); });
}

int KubeTarget::lead_time(const KubeWorkload& w) const {
  return w.settings.ckpt_signal.seconds.value_or(checkpoint_.grace_s);
}

bool KubeTarget::submit_attempt(KubeWorkload& w, std::string& error) {
  KubeWorkloadContext ctx;
  ctx.kube = kube_;
  ctx.settings = w.settings;
  ctx.user = w.user;
  ctx.uid = w.uid;
  ctx.gid = w.gid;
  ctx.attempt = w.attempt;
  ctx.avoid_nodes = w.avoid_nodes;
  ctx.checkpoint = checkpoint_;
  ctx.record = kube_workload_record(w);
  if (ctx.record.size() > kMaxRecordBytes)
    return error = "the workload's record (spec, script, env, events) is " + std::to_string(ctx.record.size()) +
                   " bytes, more than Kubernetes keeps in annotations (" + std::to_string(kMaxRecordBytes) +
                   "); put the script into the image",
           false;
  const std::string ns = url_escape(kube_.namespace_);
  KubeResponse svc = client_.request("POST", "/api/v1/namespaces/" + ns + "/services",
                                     json_text(kube_service_manifest(w.spec, ctx).get()));
  if (svc.status != 201 && svc.status != 409) return error = "creating the Service: " + status_message(svc), false;
  KubeResponse job = client_.request("POST", "/apis/batch/v1/namespaces/" + ns + "/jobs",
                                     json_text(kube_job_manifest(w.spec, ctx).get()));
  if (job.status != 201) return error = "creating the Job: " + status_message(job), false;
  return true;
}

void KubeTarget::delete_attempt(const std::string& name, int attempt) {
  const std::string ns = url_escape(kube_.namespace_);
  const std::string object = url_escape(kube_object_name(name, attempt));
  // A Job's pods are deleted with it only if asked (batch/v1 orphans them by default); each pod
  // then gets its own terminationGracePeriodSeconds.
  client_.request("DELETE", "/apis/batch/v1/namespaces/" + ns + "/jobs/" + object + "?propagationPolicy=Background",
                  R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})");
  client_.request("DELETE", "/api/v1/namespaces/" + ns + "/services/" + object);
}

bool KubeTarget::save(const KubeWorkload& w, bool suspend, std::string& error) {
  int holder = w.draining_attempt ? w.draining_attempt : w.attempt;
  Json patch = json_take(json_object());
  json_t* annotations = json_object();
  json_set(annotations, std::string(kRecordAnnotation).c_str(), json_str(kube_workload_record(w)));
  json_t* metadata = json_object();
  json_set(metadata, "annotations", annotations);
  json_set(patch.get(), "metadata", metadata);
  if (suspend) {
    // The Job controller deletes the active pods of a suspended Job, each with its grace period.
    json_t* spec = json_object();
    json_set(spec, "suspend", json_true());
    json_set(patch.get(), "spec", spec);
  }
  KubeResponse r = client_.request("PATCH",
                                   "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) + "/jobs/" +
                                       url_escape(kube_object_name(w.spec.name, holder)),
                                   json_text(patch.get()), "application/merge-patch+json");
  if (r.status == 200) return true;
  error = "updating Job " + kube_object_name(w.spec.name, holder) + ": " + status_message(r);
  std::fprintf(stderr, "safe-kube-bridge: workload %s: %s\n", w.spec.name.c_str(), error.c_str());
  return false;
}

bool KubeTarget::job_suspended(const KubeWorkload& w) {
  int holder = w.draining_attempt ? w.draining_attempt : w.attempt;
  KubeResponse r = client_.request("GET", "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) + "/jobs/" +
                                              url_escape(kube_object_name(w.spec.name, holder)));
  return r.status == 200 && json_is_true(json_object_get(json_object_get(parse(r.body).get(), "spec"), "suspend"));
}

std::optional<std::pair<int, std::string>> KubeTarget::create(const WorkloadSpec& spec, const JobSettings& settings,
                                                              const std::string& user, uid_t uid, gid_t gid) {
  if (!recovered_) return std::pair(503, "safe: the bridge is still reading its Kubernetes workloads; retry in a few seconds");
  // Pods run as their user's uid and gid, never as root (runAsNonRoot): a workload is no more
  // privileged on Kubernetes than its user is on Slurm.
  if (uid == 0)
    return std::pair(403, "safe: workloads on Kubernetes never run as root; submit as the user the workload "
                          "should run as");
  std::lock_guard lock(mutex_);
  if (workloads_.count(spec.name))
    return std::pair(409, "a Kubernetes workload named '" + spec.name + "' exists; choose another name or delete it first");
  KubeWorkload w;
  w.spec = spec;
  w.settings = settings;
  w.user = user;
  w.uid = uid;
  w.gid = gid;
  w.avoid_nodes = spec.excluded_nodes;
  w.submit_time = std::time(nullptr);
  w.events.push_back({"Submitted", w.submit_time, 1, "Job " + kube_object_name(spec.name, 1) + " created"});
  std::string error;
  if (!submit_attempt(w, error))
    return std::pair(502, "safe: the Kubernetes API refused the workload (" + error + "); check the bridge's RBAC and namespace");
  workloads_[spec.name] = std::move(w);
  return std::nullopt;
}

std::optional<KubeWorkload> KubeTarget::get(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = workloads_.find(name);
  if (it == workloads_.end()) return std::nullopt;
  return it->second;
}

std::vector<KubeWorkload> KubeTarget::list() {
  std::lock_guard lock(mutex_);
  std::vector<KubeWorkload> out;
  for (const auto& [n, w] : workloads_) out.push_back(w);
  return out;
}

bool KubeTarget::stop(const std::string& name, bool remove, std::string& error) {
  std::lock_guard lock(mutex_);
  auto it = workloads_.find(name);
  if (it == workloads_.end()) return error = "no such workload", false;
  KubeWorkload& w = it->second;
  if (remove) {
    if (w.draining_attempt) delete_attempt(name, w.draining_attempt);
    delete_attempt(name, w.attempt);
    workloads_.erase(it);
    return true;
  }
  if (w.phase == "Pending" || w.phase == "Running") {
    // Stopped once the API server has it: its pods get SIGTERM (the checkpoint signal, then the
    // lead time). Until then the workload runs on, and the caller is told why.
    KubeWorkload stopped = w;
    stopped.phase = "Stopped";
    stopped.events.push_back({"Stopped", std::time(nullptr), w.attempt, "stopped through the API"});
    // A PATCH whose answer was lost may still have been applied (record and suspension go in one
    // request): the Job then says so, and the workload is Stopped after all.
    if (!save(stopped, true, error) && !job_suspended(stopped))
      return error = "cannot suspend the workload's Job: " + error, false;
    w = std::move(stopped);
  }
  return true;
}

std::optional<std::string> KubeTarget::logs(const std::string& name, int attempt, std::string& error) {
  int n = 0;
  {
    std::lock_guard lock(mutex_);
    auto it = workloads_.find(name);
    if (it == workloads_.end()) return error = "no such workload", std::nullopt;
    n = attempt > 0 ? attempt : it->second.attempt;
    if (n > it->second.attempt) return error = "attempt " + std::to_string(n) + " has not run", std::nullopt;
  }
  const std::string ns = url_escape(kube_.namespace_);
  KubeResponse pods = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + attempt_selector(name, n));
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

Result<std::vector<KubeTarget::NodeView>> KubeTarget::nodes() {
  std::vector<NodeView> out;
  KubeResponse r = client_.request("GET", "/api/v1/nodes");
  if (r.status != 200) return Error{status_message(r)};
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

bool KubeTarget::recover(std::string& error) {
  KubeResponse r = client_.request("GET", "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) +
                                              "/jobs?labelSelector=" + url_escape(label("workload")));
  if (r.status != 200) return error = "listing SaFE's Jobs: " + status_message(r), false;
  Json list = parse(r.body);
  json_t* items = json_object_get(list.get(), "items");
  // Per workload: every attempt that has a Job, and the record of the newest.
  std::map<std::string, std::vector<int>> attempts;
  std::map<std::string, KubeWorkload> found;
  for (std::size_t i = 0; i < json_array_size(items); ++i) {
    json_t* job = json_array_get(items, i);
    std::string name = jstr(job, {"metadata", "labels", label("workload").c_str()});
    int attempt = std::atoi(jstr(job, {"metadata", "labels", label("attempt").c_str()}).c_str());
    if (name.empty() || attempt < 1) continue;
    attempts[name].push_back(attempt);
    std::string why;
    auto w = parse_kube_workload_record(jstr(job, {"metadata", "annotations", std::string(kRecordAnnotation).c_str()}), why);
    if (!w) {
      std::fprintf(stderr, "safe-kube-bridge: Job %s: no usable SaFE record (%s); left alone\n",
                   jstr(job, {"metadata", "name"}).c_str(), why.c_str());
      continue;
    }
    int holder = w->draining_attempt ? w->draining_attempt : w->attempt;
    auto it = found.find(name);
    int held = it == found.end() ? 0 : (it->second.draining_attempt ? it->second.draining_attempt : it->second.attempt);
    if (holder == attempt && holder > held) found[name] = std::move(*w);
  }
  std::lock_guard lock(mutex_);
  for (auto& [name, w] : found) {
    int holder = w.draining_attempt ? w.draining_attempt : w.attempt;
    for (int a : attempts[name])
      if (a < holder) delete_attempt(name, a);  // left over from a failover the bridge did not finish
    workloads_.emplace(name, std::move(w));
  }
  std::fprintf(stderr, "safe-kube-bridge: %zu Kubernetes workload(s) recovered from their Jobs\n", found.size());
  recovered_ = true;
  return true;
}

std::vector<PodObservation> KubeTarget::observe_pods(const std::string& name, int attempt, std::string& nodes, bool& listed) {
  std::vector<PodObservation> observed;
  KubeResponse pods = client_.request("GET", "/api/v1/namespaces/" + url_escape(kube_.namespace_) +
                                                 "/pods?labelSelector=" + attempt_selector(name, attempt));
  listed = pods.status == 200;
  if (!listed) return observed;
  Json list = parse(pods.body);
  json_t* items = json_object_get(list.get(), "items");
  std::map<std::string, NodeState> node_state;
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
    o.termination_reason = jstr(terminated, {"reason"});
    o.finished_at = jstr(terminated, {"finishedAt"});
    json_t* conds = json_object_get(json_object_get(p, "status"), "conditions");
    for (std::size_t c = 0; c < json_array_size(conds); ++c)
      if (jstr(json_array_get(conds, c), {"type"}) == "DisruptionTarget" && jstr(json_array_get(conds, c), {"status"}) == "True")
        o.disruption = jstr(json_array_get(conds, c), {"reason"});
    if (!o.node.empty()) {
      if (!node_state.count(o.node)) node_state[o.node] = observe_node(client_, o.node);
      o.node_not_ready = node_state[o.node].not_ready;
      o.node_mark = node_state[o.node].mark;
      nodes += (nodes.empty() ? "" : ",") + o.node;
    }
    observed.push_back(std::move(o));
  }
  return observed;
}

void KubeTarget::fail_over(KubeWorkload& w, const KubeDecision& d, std::time_t now) {
  std::string error;
  if (d.classification.failure_class == FailureClass::node_fault) {
    for (const auto& node : d.classification.bad_nodes) {
      if (!mark_node_unhealthy(client_, node, "node_fault", false, error)) w.events.push_back({"Warning", now, w.attempt, error});
      if (std::find(w.avoid_nodes.begin(), w.avoid_nodes.end(), node) == w.avoid_nodes.end()) w.avoid_nodes.push_back(node);
    }
  }
  w.draining_attempt = w.attempt;
  w.drain_deadline = now + lead_time(w);
  w.attempt += 1;
  w.phase = "Pending";
  w.events.push_back({"Failover", now, w.attempt,
                      d.message + "; attempt " + std::to_string(w.attempt) + " starts once the pods of attempt " +
                          std::to_string(w.draining_attempt) + " have stopped (checkpoint signal, at most " +
                          std::to_string(lead_time(w)) + " s)"});
  save(w, true, error);
  finish_failover(w, now);
}

void KubeTarget::finish_failover(KubeWorkload& w, std::time_t now) {
  std::string nodes;
  bool listed = false;
  std::vector<PodObservation> old = observe_pods(w.spec.name, w.draining_attempt, nodes, listed);
  if (!listed || (std::any_of(old.begin(), old.end(), active) && now < w.drain_deadline)) return;
  int previous = w.draining_attempt;
  w.draining_attempt = 0;
  w.drain_deadline = 0;
  std::string error;
  if (!submit_attempt(w, error)) {
    w.draining_attempt = previous;  // the record stays on the old Job
    w.phase = "Failed";
    w.events.push_back({"Failed", now, w.attempt, "recreating the Job failed: " + error});
    save(w, false, error);
    return;
  }
  delete_attempt(w.spec.name, previous);
}

void KubeTarget::reconcile(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = workloads_.find(name);
  if (it == workloads_.end()) return;
  KubeWorkload& w = it->second;
  if (w.phase != "Pending" && w.phase != "Running") return;
  std::time_t now = std::time(nullptr);
  if (w.draining_attempt) return finish_failover(w, now);
  std::string nodes;
  bool listed = false;
  std::vector<PodObservation> observed = observe_pods(name, w.attempt, nodes, listed);
  if (!listed) return;
  KubeResponse job = client_.request("GET", "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) + "/jobs/" +
                                                url_escape(kube_object_name(name, w.attempt)));
  if (job.status != 200 && job.status != 404) return;
  JobObservation job_seen;
  job_seen.gone = job.status == 404;
  Json job_object = parse(job.body);
  json_t* conds = json_object_get(json_object_get(job_object.get(), "status"), "conditions");
  for (std::size_t c = 0; c < json_array_size(conds); ++c) {
    json_t* cond = json_array_get(conds, c);
    if (jstr(cond, {"type"}) == "Failed" && jstr(cond, {"status"}) == "True" && jstr(cond, {"reason"}) == "DeadlineExceeded")
      job_seen.deadline_exceeded = true;
  }
  w.nodes = nodes;
  KubeDecision d = decide_kube_attempt(observed, job_seen, w.spec.nodes, w.attempt, w.settings.retries, failover_);
  std::string error;
  switch (d.action) {
    case KubeAction::wait: {
      bool running = std::any_of(observed.begin(), observed.end(), [](const auto& o) { return o.phase == "Running"; });
      if (running && w.phase != "Running") {
        w.phase = "Running";
        w.events.push_back({"Running", now, w.attempt, "pods running on " + nodes});
        save(w, false, error);
      }
      break;
    }
    case KubeAction::succeeded:
      w.phase = "Succeeded";
      w.events.push_back({"Succeeded", now, w.attempt, d.message});
      save(w, false, error);
      break;
    case KubeAction::fail:
      give_up(w, d, std::any_of(observed.begin(), observed.end(), active), now);
      break;
    case KubeAction::failover:
      fail_over(w, d, now);
      break;
  }
}

void KubeTarget::give_up(KubeWorkload& w, const KubeDecision& d, bool stop_pods, std::time_t now) {
  std::string error;
  // A faulty node is marked even when the workload is not retried; pods still running are
  // stopped (checkpoint signal first).
  if (d.classification.failure_class == FailureClass::node_fault)
    for (const auto& node : d.classification.bad_nodes) mark_node_unhealthy(client_, node, "node_fault", false, error);
  w.phase = "Failed";
  w.events.push_back({"Failed", now, w.attempt, d.message});
  save(w, stop_pods, error);
}

void KubeTarget::poll_hangs() {
  struct Due {
    std::string name;
    int attempt;
    long long since;  // seconds back to the previous look, with a second of overlap
  };
  std::vector<Due> due;
  std::time_t now = std::time(nullptr);
  {
    std::lock_guard lock(mutex_);
    for (auto it = hang_watch_.begin(); it != hang_watch_.end();)
      it = workloads_.count(it->first) ? std::next(it) : hang_watch_.erase(it);
    for (const auto& [name, w] : workloads_) {
      int every = hang_poll_seconds(w.settings.hang_timeout);
      if (!every || w.phase != "Running" || w.draining_attempt) continue;
      HangWatch& h = hang_watch_[name];
      if (h.attempt != w.attempt) h = HangWatch{w.attempt, 0, 0, {}};
      if (now < h.next_poll) continue;
      h.next_poll = now + every;
      due.push_back({name, w.attempt, h.last_poll ? now - h.last_poll + 1 : every});
    }
  }
  const std::string ns = url_escape(kube_.namespace_);
  for (const Due& d : due) {
    // Outside the lock: requests to the API server must not hold up the bridge's REST answers.
    KubeResponse pods = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + attempt_selector(d.name, d.attempt));
    if (pods.status != 200) continue;
    Json list = parse(pods.body);
    json_t* items = json_object_get(list.get(), "items");
    std::map<std::string, bool> grew;  // running pod -> wrote since the previous look
    bool complete = true;
    for (std::size_t i = 0; i < json_array_size(items); ++i) {
      json_t* p = json_array_get(items, i);
      if (jstr(p, {"status", "phase"}) != "Running" || json_object_get(json_object_get(p, "metadata"), "deletionTimestamp")) continue;
      std::string pod = jstr(p, {"metadata", "name"});
      // One byte written within `since` seconds (by the kubelet's clock) is all that is asked.
      KubeResponse log = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods/" + url_escape(pod) +
                                                    "/log?sinceSeconds=" + std::to_string(d.since) + "&limitBytes=1");
      if (log.status != 200) complete = false;  // unknown is not silence: no verdict this time
      grew[pod] = log.status == 200 && !log.body.empty();
    }
    std::lock_guard lock(mutex_);
    auto it = workloads_.find(d.name);
    if (it == workloads_.end()) continue;
    KubeWorkload& w = it->second;
    HangWatch& h = hang_watch_[d.name];
    if (w.attempt != d.attempt || h.attempt != d.attempt || w.phase != "Running" || w.draining_attempt) continue;
    h.last_poll = now;
    std::map<std::string, std::time_t> seen;
    std::vector<PodProgress> progress;
    for (const auto& [pod, wrote] : grew) {
      auto last = h.last_output.find(pod);
      seen[pod] = wrote || last == h.last_output.end() ? now : last->second;
      progress.push_back({pod, seen[pod]});
    }
    h.last_output = std::move(seen);
    std::optional<JobFailure> hung = kube_hang_failure(progress, now, w.settings.hang_timeout);
    if (!complete || !hung) continue;
    hang_watch_.erase(d.name);
    KubeDecision decision = decide_kube_failure(*hung, w.attempt, w.settings.retries, failover_);
    if (decision.action == KubeAction::failover) fail_over(w, decision, now);
    else give_up(w, decision, true, now);
  }
}

void KubeTarget::reconcile_all() {
  std::vector<std::string> names;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [n, w] : workloads_)
      if (w.phase == "Pending" || w.phase == "Running") names.push_back(n);
  }
  for (const auto& n : names) reconcile(n);
}

// List, then watch from the list's resourceVersion; after a disconnect resume from the last
// version seen; after 410 Gone (the version was compacted away) list again.
void KubeTarget::watch_loop(const std::stop_token& stop, const std::string& collection, bool pods) {
  std::string rv;
  std::string selector = pods ? "&labelSelector=" + url_escape(label("workload")) : "";
  auto last_resync = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    if (rv.empty()) {
      KubeResponse r = client_.request("GET", collection + (pods ? "?" + selector.substr(1) : ""));
      if (r.status != 200) {
        pause(stop, std::chrono::seconds(1));
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
                                     if (type == "BOOKMARK") return !stop.stop_requested();
                                     if (pods) {
                                       std::string w = jstr(obj, {"metadata", "labels", label("workload").c_str()});
                                       if (!w.empty()) reconcile(w);
                                     } else {
                                       reconcile_all();
                                     }
                                     return !stop.stop_requested();
                                   },
                                   stop);
    if (r.status == 410) rv.clear();
    if (r.status == 0 || r.status >= 500) pause(stop, std::chrono::milliseconds(500));
    // Informer-style resync: catches anything a watch could not express (none expected).
    if (std::chrono::steady_clock::now() - last_resync > std::chrono::seconds(60)) {
      last_resync = std::chrono::steady_clock::now();
      reconcile_all();
    }
  }
}

void KubeTarget::start() {
  const std::string ns = url_escape(kube_.namespace_);
  threads_.reserve(3);
  threads_.emplace_back([this](std::stop_token stop) {
    std::string error, last;
    while (!recover(error)) {
      if (error != last) std::fprintf(stderr, "safe-kube-bridge: %s; retrying\n", error.c_str());
      last = error;
      if (!pause(stop, std::chrono::seconds(1))) return;
    }
    {
      std::lock_guard lock(wake_mutex_);  // so that no waiter misses it
    }
    wake_.notify_all();
    // Failovers whose old pods never report back (a dead node) go on when the lead time is over;
    // workloads with a hangTimeout get their pod logs looked at when due.
    while (pause(stop, std::chrono::seconds(1))) {
      std::vector<std::string> waiting;
      {
        std::lock_guard lock(mutex_);
        for (const auto& [n, w] : workloads_)
          if (w.draining_attempt && w.phase == "Pending" && std::time(nullptr) >= w.drain_deadline) waiting.push_back(n);
      }
      for (const auto& n : waiting) reconcile(n);
      poll_hangs();
    }
  });
  threads_.emplace_back([this, ns](std::stop_token stop) {
    if (wait_recovered(stop)) watch_loop(stop, "/api/v1/namespaces/" + ns + "/pods", true);
  });
  threads_.emplace_back([this](std::stop_token stop) {
    if (wait_recovered(stop)) watch_loop(stop, "/api/v1/nodes", false);
  });
}

}  // namespace safe::bridge
