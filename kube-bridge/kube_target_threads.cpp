// The Kubernetes target's threads: recovery, then a one-second tick (failovers waiting on their
// lead time, hang polls), and the pod and node watches that call reconcile. Owned by the target:
// its destructor stops and joins them.
#include <chrono>
#include <cstdio>

#include "kube-bridge/kube_manifests.hpp"
#include "common/daemon_log.hpp"
#include "kube-bridge/kube_observations.hpp"
#include "kube-bridge/kube_target.hpp"

namespace safe::bridge {
namespace {

std::string label(std::string_view name) { return std::string(kKubePrefix) + std::string(name); }

}  // namespace

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

void KubeTarget::reconcile_all() {
  std::vector<std::string> names;
  {
    std::lock_guard lock(state_mutex_);
    for (const auto& [n, w] : workloads_)
      if (is_active(w.phase)) names.push_back(n);
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
      rv = list_resource_version(r.body);
      reconcile_all();
    }
    KubeResponse r = client_.watch(collection + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=" +
                                       url_escape(rv) + selector,
                                   [&](std::string_view line) {
                                     KubeWatchEvent ev = parse_watch_event(line);
                                     if (ev.type == "ERROR") {
                                       if (ev.expired) rv.clear();
                                       return false;
                                     }
                                     if (!ev.resource_version.empty()) rv = ev.resource_version;
                                     if (ev.type == "BOOKMARK") return !stop.stop_requested();
                                     if (!pods) reconcile_all();
                                     else if (!ev.workload.empty()) reconcile(ev.workload);
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

void KubeTarget::mark_recovered() {
  if (recovered_.exchange(true)) return;
  {
    std::lock_guard lock(wake_mutex_);  // so that no waiter misses it
  }
  wake_.notify_all();
}

void KubeTarget::elect(const std::stop_token& stop) {
  const LeaderElectionConfig& le = kube_.leader_election;
  const std::string lease = kube_.namespace_ + "/" + le.lease;
  safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: leader election on Lease %s as %s", lease.c_str(), identity().c_str());
  long led_term = 0;
  std::string last_error, last_leader;
  do {
    const bool leads = elector_->tick();
    // The term before the deadline: acting() reads both, and a fresh deadline seen with the term
    // from before a lapse (still the caught-up one) would let a workload be acted on from what
    // this bridge knew before it stalled (bridge_kube_leader: SIGSTOP past the lease, then CONT).
    term_ = leads ? elector_->term() : 0;
    lead_until_ = elector_->lead_until().time_since_epoch().count();
    {
      std::lock_guard lock(leader_mutex_);
      leader_ = elector_->holder();
    }
    if (elector_->last_error() != last_error) {
      last_error = elector_->last_error();
      if (!last_error.empty())
        safe::log_linef(safe::LogPriority::warning, "safe-kube-bridge: Lease %s: %s; %s", lease.c_str(), last_error.c_str(),
                     leads ? "still leading until the renew deadline" : "retrying");
    }
    if (leads && elector_->term() != led_term) {
      led_term = elector_->term();
      safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: leading (Lease %s): recovering, then reconciling", lease.c_str());
    }
    if (!leads && led_term) {
      led_term = 0;
      safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: stopped leading (Lease %s%s%s); standing by", lease.c_str(),
                   leader().empty() ? "" : " held by ", leader().c_str());
    }
    if (!leads) {
      if (leader() != last_leader && !leader().empty())
        safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: standing by; the leader is %s", leader().c_str());
      (void)recover(false);  // the REST API's reads, from the leader's records
    }
    last_leader = leader();
  } while (pause(stop, std::chrono::seconds(le.retry_period_s)));
  // Stopped: no new action, the one under way finished, then the Lease goes at once.
  term_ = 0;
  lead_until_ = 0;
  std::lock_guard act(act_mutex_);
  elector_->release();
}

void KubeTarget::catch_up() {
  const long term = term_.load();
  if (term == 0 || caught_up_term_.load() == term) return;
  if (!recover(true)) return;  // tried again at the next tick
  // Only if still in the term it began in: a lapse meanwhile started another, to recover anew.
  if (term_.load() != term) return;
  caught_up_term_ = term;
  reconcile_all();
  safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: leading: every workload reconciled once");
}

void KubeTarget::start() {
  const std::string ns = url_escape(kube_.namespace_);
  threads_.reserve(4);
  threads_.emplace_back([this](std::stop_token stop) {
    std::string last;
    // With leader election, the records are read by elect() (standing by) and catch_up() (leading).
    if (!elector_) {
      for (Status recovered = recover(); !recovered; recovered = recover()) {
        if (recovered.error() != last) safe::log_linef(safe::LogPriority::warning, "safe-kube-bridge: %s; retrying", recovered.error().c_str());
        last = recovered.error();
        if (!pause(stop, std::chrono::seconds(1))) return;
      }
    }
    // Failovers whose old pods never report back (a dead node) go on when the lead time is over;
    // workloads with a hangTimeout get their pod logs looked at when due.
    while (pause(stop, std::chrono::seconds(1))) {
      if (elector_) catch_up();
      std::vector<std::string> waiting;
      {
        std::lock_guard lock(state_mutex_);
        std::time_t now = clock_();
        for (const auto& [n, w] : workloads_)
          if (w.draining_attempt && w.phase == WorkloadPhase::pending && now >= w.drain_deadline) waiting.push_back(n);
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
  if (elector_) threads_.emplace_back([this](std::stop_token stop) { elect(stop); });
}

}  // namespace safe::bridge
