#include "kube-bridge/kube_target.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <thread>

#include <unistd.h>

#include "common/daemon_log.hpp"
#include "common/json_value.hpp"
#include "kube-bridge/kube_manifests.hpp"
#include "kube-bridge/kube_node_mark.hpp"
#include "kube-bridge/kube_observations.hpp"

namespace safe::bridge {
namespace {

// Every request that changes something is checked against the lead right before it is sent: an
// action under way when the lead ends stops at its next change (the new leader recovers the
// workload from the last record the old one saved).
constexpr const char* kNotLeading = "this bridge no longer leads: left to the leader";

// Kubernetes allows 256 KiB of annotations per object; the record stays well below.
constexpr std::size_t kMaxRecordBytes = 192 * 1024;

std::string status_message(const KubeResponse& r) {
  if (r.status == 0) return r.error;
  std::string m = kube_status_message(r.body);
  return "HTTP " + std::to_string(r.status) + (m.empty() ? "" : ": " + m);
}

std::string label(std::string_view name) { return std::string(kKubePrefix) + std::string(name); }

std::string attempt_selector(const std::string& workload, int attempt) {
  return url_escape(label("workload") + "=" + workload + "," + label("attempt") + "=" + std::to_string(attempt));
}

bool active(const PodObservation& p) { return p.phase != "Succeeded" && p.phase != "Failed"; }

int holder_of(const KubeWorkload& w) { return w.draining_attempt ? w.draining_attempt : w.attempt; }

}  // namespace

KubeTarget::KubeTarget(const SafeConfig& config, KubeClient& client, Clock clock)
    : kube_(config.kube_bridge.kubernetes), failover_(config.failover), checkpoint_(config.checkpoint), client_(client),
      clock_(std::move(clock)) {
  const LeaderElectionConfig& le = kube_.leader_election;
  if (!le.enabled()) return;
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  lease_api_ = std::make_unique<KubeLeaseApi>(client_, kube_.namespace_, le.lease);
  elector_ = std::make_unique<LeaseElector>(
      *lease_api_, std::string(host) + "_" + std::to_string(getpid()),
      LeaseTiming{std::chrono::seconds(le.lease_duration_s), std::chrono::seconds(le.renew_deadline_s),
                  std::chrono::seconds(le.retry_period_s)},
      [] { return std::chrono::steady_clock::now(); }, kube_micro_time_now);
}

bool KubeTarget::leads() const {
  return !elector_ ||
         (term_.load() != 0 && std::chrono::steady_clock::now().time_since_epoch().count() < lead_until_.load());
}

bool KubeTarget::acting() const { return leads() && (!elector_ || caught_up_term_.load() == term_.load()); }

std::string KubeTarget::identity() const { return elector_ ? elector_->identity() : ""; }

std::string KubeTarget::leader() const {
  std::lock_guard lock(leader_mutex_);
  return leader_;
}

std::string KubeTarget::standing_by() const {
  std::string lead = leader();
  return "safe: this bridge (" + identity() + ") stands by; the leader" +
         (lead.empty() ? " is not known yet" : " is " + lead) + " (Lease " + kube_.namespace_ + "/" +
         kube_.leader_election.lease + "): send creates and stops to the leading bridge, or retry once this one has "
         "taken over";
}

int KubeTarget::lead_time(const KubeWorkload& w) const {
  return w.settings.ckpt_signal.seconds.value_or(checkpoint_.grace_s);
}

Status KubeTarget::submit_attempt(const KubeWorkload& w) {
  if (!leads()) return Error{kNotLeading};
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
    return Error{"the workload's record (spec, script, env, events) is " + std::to_string(ctx.record.size()) +
                 " bytes, more than Kubernetes keeps in annotations (" + std::to_string(kMaxRecordBytes) +
                 "); put the script into the image"};
  const std::string ns = url_escape(kube_.namespace_);
  KubeResponse svc = client_.request("POST", "/api/v1/namespaces/" + ns + "/services",
                                     json_text(kube_service_manifest(w.spec, ctx).get()));
  if (svc.status != 201 && svc.status != 409) return Error{"creating the Service: " + status_message(svc)};
  KubeResponse job = client_.request("POST", "/apis/batch/v1/namespaces/" + ns + "/jobs",
                                     json_text(kube_job_manifest(w.spec, ctx).get()));
  // 409: made already, by an earlier leader (or this bridge, its answer lost) - if it is this
  // attempt's Job, the attempt has its Job.
  if (job.status == 409) {
    KubeResponse existing = client_.request("GET", "/apis/batch/v1/namespaces/" + ns + "/jobs/" +
                                                       url_escape(kube_object_name(w.spec.name, w.attempt)));
    if (existing.status == 200 && job_is_attempt(existing.body, w.spec.name, w.attempt)) return ok_status();
  }
  if (job.status != 201) return Error{"creating the Job: " + status_message(job)};
  return ok_status();
}

void KubeTarget::delete_attempt(const std::string& name, int attempt) {
  if (!leads()) return;  // left to the leader, which recovers the workload from its record
  const std::string ns = url_escape(kube_.namespace_);
  const std::string object = url_escape(kube_object_name(name, attempt));
  // A Job's pods are deleted with it only if asked (batch/v1 orphans them by default); each pod
  // then gets its own terminationGracePeriodSeconds.
  client_.request("DELETE", "/apis/batch/v1/namespaces/" + ns + "/jobs/" + object + "?propagationPolicy=Background",
                  R"({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"})");
  client_.request("DELETE", "/api/v1/namespaces/" + ns + "/services/" + object);
}

Status KubeTarget::save(const KubeWorkload& w, bool suspend) {
  if (!leads()) return Error{kNotLeading};
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
  const std::string job = kube_object_name(w.spec.name, holder_of(w));
  KubeResponse r = client_.request("PATCH", "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) + "/jobs/" +
                                                url_escape(job),
                                   json_text(patch.get()), "application/merge-patch+json");
  if (r.status == 200) return ok_status();
  std::string error = "updating Job " + job + ": " + status_message(r);
  safe::log_linef(safe::LogPriority::warning, "safe-kube-bridge: workload %s: %s", w.spec.name.c_str(), error.c_str());
  return Error{error};
}

bool KubeTarget::job_suspended(const KubeWorkload& w) {
  KubeResponse r = client_.request("GET", "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) + "/jobs/" +
                                              url_escape(kube_object_name(w.spec.name, holder_of(w))));
  return r.status == 200 && job_is_suspended(r.body);
}

std::optional<KubeWorkload> KubeTarget::copy_of(const std::string& name) {
  std::lock_guard lock(state_mutex_);
  auto it = workloads_.find(name);
  if (it == workloads_.end()) return std::nullopt;
  return it->second;
}

void KubeTarget::publish(const KubeWorkload& w) {
  std::lock_guard lock(state_mutex_);
  workloads_[w.spec.name] = w;
}

std::optional<KubeTarget::Refusal> KubeTarget::create(const WorkloadSpec& spec, const JobSettings& settings,
                                                      const std::string& user, uid_t uid, gid_t gid) {
  if (!recovered_) return Refusal{503, "safe: the bridge is still reading its Kubernetes workloads; retry in a few seconds"};
  // Pods run as their user's uid and gid, never as root (runAsNonRoot): a workload is no more
  // privileged on Kubernetes than its user is on Slurm.
  if (uid == 0)
    return Refusal{403, "safe: workloads on Kubernetes never run as root; submit as the user the workload should "
                        "run as"};
  std::lock_guard act(act_mutex_);
  if (!acting()) return Refusal{503, standing_by()};
  if (copy_of(spec.name))
    return Refusal{409, "a Kubernetes workload named '" + spec.name + "' exists; choose another name or delete it first"};
  KubeWorkload w;
  w.spec = spec;
  w.settings = settings;
  w.user = user;
  w.uid = uid;
  w.gid = gid;
  w.avoid_nodes = spec.excluded_nodes;
  w.submit_time = clock_();
  w.events.push_back({"Submitted", w.submit_time, 1, "Job " + kube_object_name(spec.name, 1) + " created"});
  if (Status created = submit_attempt(w); !created)
    return Refusal{502, "safe: the Kubernetes API refused the workload (" + created.error() +
                            "); check the bridge's RBAC and namespace"};
  publish(w);
  return std::nullopt;
}

std::optional<KubeWorkload> KubeTarget::get(const std::string& name) { return copy_of(name); }

std::vector<KubeWorkload> KubeTarget::list() {
  std::lock_guard lock(state_mutex_);
  std::vector<KubeWorkload> out;
  for (const auto& [n, w] : workloads_) out.push_back(w);
  return out;
}

Status KubeTarget::stop(const std::string& name, bool remove) {
  std::lock_guard act(act_mutex_);
  if (!acting()) return Error{standing_by().substr(6)};  // without "safe: ", which the caller adds
  std::optional<KubeWorkload> w = copy_of(name);
  if (!w) return Error{"no such workload"};
  if (remove) {
    if (w->draining_attempt) delete_attempt(name, w->draining_attempt);
    delete_attempt(name, w->attempt);
    std::lock_guard lock(state_mutex_);
    workloads_.erase(name);
    return ok_status();
  }
  if (!is_active(w->phase)) return ok_status();
  // Stopped once the API server has it: its pods get SIGTERM (the checkpoint signal, then the
  // lead time). Until then the workload runs on, and the caller is told why.
  w->phase = WorkloadPhase::stopped;
  w->events.push_back({"Stopped", clock_(), w->attempt, "stopped through the API"});
  // A PATCH whose answer was lost may still have been applied (record and suspension go in one
  // request): the Job then says so, and the workload is Stopped after all.
  if (Status saved = save(*w, true); !saved && !job_suspended(*w))
    return Error{"cannot suspend the workload's Job: " + saved.error()};
  publish(*w);
  return ok_status();
}

Result<std::string> KubeTarget::logs(const std::string& name, int attempt) {
  std::optional<KubeWorkload> w = copy_of(name);
  if (!w) return Error{"no such workload"};
  int n = attempt > 0 ? attempt : w->attempt;
  if (n > w->attempt) return Error{"attempt " + std::to_string(n) + " has not run"};
  const std::string ns = url_escape(kube_.namespace_);
  KubeResponse pods = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + attempt_selector(name, n));
  if (pods.status != 200) return Error{"listing pods: " + status_message(pods)};
  std::string pod = log_pod(pods.body);
  if (pod.empty()) return Error{"the attempt has no pods (any more)"};
  KubeResponse log = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods/" + url_escape(pod) + "/log");
  if (log.status != 200) return Error{"reading the log of pod " + pod + ": " + status_message(log)};
  return log.body;
}

Result<std::vector<KubeTarget::NodeView>> KubeTarget::nodes() {
  KubeResponse r = client_.request("GET", "/api/v1/nodes");
  if (r.status != 200) return Error{status_message(r)};
  auto nodes = parse_kube_node_list(r.body);
  if (!nodes) return Error{nodes.error()};
  std::vector<NodeView> out;
  for (const KubeNodeState& n : *nodes) out.push_back({n.name, n.ready.value_or(false), n.mark.has_value()});
  return out;
}

Status KubeTarget::recover(bool tidy) {
  KubeResponse r = client_.request("GET", "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) +
                                              "/jobs?labelSelector=" + url_escape(label("workload")));
  if (r.status != 200) return Error{"listing SaFE's Jobs: " + status_message(r)};
  auto found = parse_recovered_workloads(r.body);
  if (!found) return Error{"listing SaFE's Jobs: " + found.error()};
  for (const std::string& why : found->unusable)
    safe::log_linef(safe::LogPriority::warning, "safe-kube-bridge: %s: no usable SaFE record; left alone", why.c_str());
  std::lock_guard act(act_mutex_);
  if (tidy)
    for (auto& [name, w] : found->workloads)
      for (int a : found->attempts[name])
        if (a < holder_of(w)) delete_attempt(name, a);  // left over from a failover the bridge did not finish
  const std::size_t count = found->workloads.size();
  {
    std::lock_guard lock(state_mutex_);
    workloads_ = std::move(found->workloads);
  }
  if (tidy || !recovered_)
    safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: %zu Kubernetes workload(s) %s from their Jobs", count,
                 tidy ? "recovered" : "read");
  mark_recovered();
  return ok_status();
}

Result<std::vector<PodObservation>> KubeTarget::observe_pods(const std::string& name, int attempt) {
  KubeResponse list = client_.request("GET", "/api/v1/namespaces/" + url_escape(kube_.namespace_) +
                                                 "/pods?labelSelector=" + attempt_selector(name, attempt));
  if (list.status != 200) return Error{"listing pods: " + status_message(list)};
  auto pods = parse_pod_list(list.body);
  if (!pods) return pods;
  std::map<std::string, KubeNodeState> nodes;
  for (const PodObservation& p : *pods) {
    if (p.node.empty() || nodes.count(p.node)) continue;
    KubeResponse r = client_.request("GET", "/api/v1/nodes/" + url_escape(p.node));
    if (r.status == 404) continue;  // gone: add_node_states takes it as not ready
    nodes[p.node] = r.status == 200 ? parse_kube_node(r.body) : KubeNodeState{p.node, std::nullopt, std::nullopt};
  }
  add_node_states(*pods, nodes);
  return pods;
}

void KubeTarget::fail_over(KubeWorkload& w, const KubeDecision& d, std::time_t now) {
  if (d.classification.failure_class == FailureClass::node_fault) {
    for (const auto& node : d.classification.bad_nodes) {
      if (!leads()) break;
      if (Status marked = mark_node_unhealthy(client_, node, "node_fault", false); !marked)
        w.events.push_back({"Warning", now, w.attempt, marked.error()});
      if (std::find(w.avoid_nodes.begin(), w.avoid_nodes.end(), node) == w.avoid_nodes.end()) w.avoid_nodes.push_back(node);
    }
  }
  w.draining_attempt = w.attempt;
  w.drain_deadline = now + lead_time(w);
  w.attempt += 1;
  w.phase = WorkloadPhase::pending;
  w.events.push_back({"Failover", now, w.attempt,
                      d.message + "; attempt " + std::to_string(w.attempt) + " starts once the pods of attempt " +
                          std::to_string(w.draining_attempt) + " have stopped (checkpoint signal, at most " +
                          std::to_string(lead_time(w)) + " s)"});
  safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: workload %s: failover: %s", w.spec.name.c_str(),
               w.events.back().message.c_str());
  // Not saved: the API server refused the suspension or the record. The failover goes on from
  // memory (the next attempt is created once the old pods stopped or the lead time is over); a
  // bridge restarted before that takes the workload up from the record it last saved.
  (void)save(w, true);
  finish_failover(w, now);
}

void KubeTarget::finish_failover(KubeWorkload& w, std::time_t now) {
  auto old = observe_pods(w.spec.name, w.draining_attempt);
  if (!old || (std::any_of(old->begin(), old->end(), active) && now < w.drain_deadline)) return;
  int previous = w.draining_attempt;
  w.draining_attempt = 0;
  w.drain_deadline = 0;
  if (Status submitted = submit_attempt(w); !submitted) {
    w.draining_attempt = previous;  // the record stays on the old Job
    w.phase = WorkloadPhase::failed;
    w.events.push_back({"Failed", now, w.attempt, "recreating the Job failed: " + submitted.error()});
    (void)save(w, false);  // logged by save; the workload is Failed in memory either way
    return;
  }
  safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: workload %s: attempt %d created", w.spec.name.c_str(), w.attempt);
  delete_attempt(w.spec.name, previous);
}

void KubeTarget::reconcile(const std::string& name) {
  std::lock_guard act(act_mutex_);
  if (!acting()) return;
  std::optional<KubeWorkload> w = copy_of(name);
  if (!w || !is_active(w->phase)) return;
  reconcile_locked(*w);
  publish(*w);
}

void KubeTarget::reconcile_locked(KubeWorkload& w) {
  std::time_t now = clock_();
  if (w.draining_attempt) return finish_failover(w, now);
  auto observed = observe_pods(w.spec.name, w.attempt);
  if (!observed) return;
  KubeResponse job = client_.request("GET", "/apis/batch/v1/namespaces/" + url_escape(kube_.namespace_) + "/jobs/" +
                                                url_escape(kube_object_name(w.spec.name, w.attempt)));
  if (job.status != 200 && job.status != 404) return;
  std::string nodes;
  for (const PodObservation& o : *observed)
    if (!o.node.empty()) nodes += (nodes.empty() ? "" : ",") + o.node;
  w.nodes = nodes;
  KubeDecision d = decide_kube_attempt(*observed, parse_job_observation(job.status, job.body), w.spec.nodes, w.attempt,
                                       w.settings.retries, failover_);
  switch (d.action) {
    case KubeAction::wait: {
      bool running = std::any_of(observed->begin(), observed->end(), [](const auto& o) { return o.phase == "Running"; });
      if (running && w.phase != WorkloadPhase::running) {
        w.phase = WorkloadPhase::running;
        w.events.push_back({"Running", now, w.attempt, "pods running on " + nodes});
        (void)save(w, false);  // a record one event behind: the next save carries it
      }
      break;
    }
    case KubeAction::succeeded:
      w.phase = WorkloadPhase::succeeded;
      w.events.push_back({"Succeeded", now, w.attempt, d.message});
      (void)save(w, false);  // the Job succeeded either way; a restarted bridge sees that again
      break;
    case KubeAction::fail:
      give_up(w, d, std::any_of(observed->begin(), observed->end(), active), now);
      break;
    case KubeAction::failover:
      fail_over(w, d, now);
      break;
  }
}

void KubeTarget::give_up(KubeWorkload& w, const KubeDecision& d, bool stop_pods, std::time_t now) {
  // A faulty node is marked even when the workload is not retried; pods still running are
  // stopped (checkpoint signal first).
  if (d.classification.failure_class == FailureClass::node_fault) {
    for (const auto& node : d.classification.bad_nodes) {
      if (!leads()) break;
      if (Status marked = mark_node_unhealthy(client_, node, "node_fault", false); !marked)
        w.events.push_back({"Warning", now, w.attempt, marked.error()});
    }
  }
  w.phase = WorkloadPhase::failed;
  w.events.push_back({"Failed", now, w.attempt, d.message});
  safe::log_linef(safe::LogPriority::warning, "safe-kube-bridge: workload %s: failed: %s", w.spec.name.c_str(), d.message.c_str());
  (void)save(w, stop_pods);  // logged by save; the workload is Failed in memory either way
}

void KubeTarget::poll_hangs() {
  struct Due {
    std::string name;
    int attempt;
    long long since;  // seconds back to the previous look, with a second of overlap
  };
  std::vector<Due> due;
  std::time_t now = clock_();
  if (!acting()) return;  // a new leader's hangTimeouts start afresh
  {
    std::lock_guard act(act_mutex_);
    std::lock_guard lock(state_mutex_);
    for (auto it = hang_watch_.begin(); it != hang_watch_.end();)
      it = workloads_.count(it->first) ? std::next(it) : hang_watch_.erase(it);
    for (const auto& [name, w] : workloads_) {
      int every = hang_poll_seconds(w.settings.hang_timeout);
      if (!every || w.phase != WorkloadPhase::running || w.draining_attempt) continue;
      HangWatch& h = hang_watch_[name];
      if (h.attempt != w.attempt) h = HangWatch{w.attempt, 0, 0, {}};
      if (now < h.next_poll) continue;
      h.next_poll = now + every;
      due.push_back({name, w.attempt, h.last_poll ? now - h.last_poll + 1 : every});
    }
  }
  const std::string ns = url_escape(kube_.namespace_);
  for (const Due& d : due) {
    // Outside the locks: reading logs must hold up neither the REST answers nor the watches.
    KubeResponse pods = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods?labelSelector=" + attempt_selector(d.name, d.attempt));
    if (pods.status != 200) continue;
    std::map<std::string, bool> grew;  // running pod -> wrote since the previous look
    bool complete = true;
    for (const std::string& pod : running_pods(pods.body)) {
      // One byte written within `since` seconds (by the kubelet's clock) is all that is asked.
      KubeResponse log = client_.request("GET", "/api/v1/namespaces/" + ns + "/pods/" + url_escape(pod) +
                                                    "/log?sinceSeconds=" + std::to_string(d.since) + "&limitBytes=1");
      if (log.status != 200) complete = false;  // unknown is not silence: no verdict this time
      grew[pod] = log.status == 200 && !log.body.empty();
    }
    std::lock_guard act(act_mutex_);
    std::optional<KubeWorkload> w = copy_of(d.name);
    if (!w || !acting()) continue;
    HangWatch& h = hang_watch_[d.name];
    if (w->attempt != d.attempt || h.attempt != d.attempt || w->phase != WorkloadPhase::running || w->draining_attempt)
      continue;
    h.last_poll = now;
    std::map<std::string, std::time_t> seen;
    std::vector<PodProgress> progress;
    for (const auto& [pod, wrote] : grew) {
      auto last = h.last_output.find(pod);
      seen[pod] = wrote || last == h.last_output.end() ? now : last->second;
      progress.push_back({pod, seen[pod]});
    }
    h.last_output = std::move(seen);
    std::optional<JobFailure> hung = kube_hang_failure(progress, now, w->settings.hang_timeout);
    if (!complete || !hung) continue;
    hang_watch_.erase(d.name);
    KubeDecision decision = decide_kube_failure(*hung, w->attempt, w->settings.retries, failover_);
    if (decision.action == KubeAction::failover) fail_over(*w, decision, now);
    else give_up(*w, decision, true, now);
    publish(*w);
  }
}

}  // namespace safe::bridge
