#include "kube-bridge/service_controller.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "common/atomic_file.hpp"
#include "common/daemon_log.hpp"
#include "kube-bridge/service_view.hpp"
#include "kube-bridge/slurm_workload.hpp"
#include "kube-bridge/workload_view.hpp"

namespace safe::bridge {
namespace {

// A directory of the bridge's: made with `mode` when missing, and refused when anyone but the
// bridge's user could write into it, for a planted record would run jobs as its uid. `private_dir`:
// others' access is taken away (specs hold users' environments); an admin's stricter mode stays.
// The state directory itself may be a symbolic link (to another disk); what is in it may not.
Status own_dir(const std::string& path, mode_t mode, bool private_dir, bool follow) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) return Error{path + ": " + std::strerror(errno)};
  struct stat st {};
  if ((follow ? stat(path.c_str(), &st) : lstat(path.c_str(), &st)) != 0) return Error{path + ": " + std::strerror(errno)};
  if (!S_ISDIR(st.st_mode)) return Error{path + " is not a directory"};
  if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
    return Error{path + " must belong to the bridge's user (uid " + std::to_string(geteuid()) +
                 ") and be writable by no one else; chown and chmod go-w it"};
  if (private_dir && (st.st_mode & 077) && chmod(path.c_str(), st.st_mode & 0700) != 0)
    return Error{path + ": " + std::strerror(errno)};
  return ok_status();
}

struct NodeFacts {
  std::string host;
  bool unhealthy = false;
  bool down = false;
};

ReplicaJobObservation observe(const SlurmJob& job, int port, const std::map<std::string, NodeFacts>& nodes, std::time_t now) {
  ReplicaJobObservation o;
  o.live = !has_ended(job);
  o.running = job.state == SlurmJobState::running && !job.requeued;
  o.port = port;
  o.node = !job.batch_host.empty() ? job.batch_host : job.nodes;
  auto node = nodes.find(o.node);
  if (node != nodes.end()) {
    o.host = node->second.host;
    o.node_unhealthy = o.running && node->second.unhealthy;
  }
  o.node_fault = !o.live && (job.state == SlurmJobState::node_fail || job.state == SlurmJobState::boot_fail ||
                             (node != nodes.end() && node->second.down));
  if (job.state == SlurmJobState::pending) o.pending_reason = job.reason;
  o.exit_code = static_cast<int>(job.exit_code >> 8);
  o.start_time = job.start_time;
  o.end_time = job.end_time;
  // (A job whose whole time limit is that short is not retired: it would never stop moving.)
  o.ends_soon = o.running && job.end_time > 0 && job.end_time - now < kRetireAheadS && now - job.start_time > kRetireAheadS;
  o.completing = job.completing;
  return o;
}

}  // namespace

ServiceController::ServiceController(ServiceSettings settings, SlurmCache& slurm, UserDirectory& users,
                                     SlurmTarget::OutputReader read_output, Prober prober, Clock clock)
    : settings_(std::move(settings)), slurm_(slurm), users_(users), read_output_(std::move(read_output)),
      prober_(std::move(prober)), clock_(std::move(clock)) {}

ServiceController::~ServiceController() { stop_thread(); }

Status ServiceController::load() {
  if (auto made = own_dir(settings_.state_dir, 0755, false, true); !made) return made;
  if (auto made = own_dir(settings_.state_dir + "/services", 0700, true, false); !made) return made;
  if (auto made = own_dir(settings_.state_dir + "/endpoints", 0755, false, false); !made) return made;
  std::string dir = settings_.state_dir + "/services";
  DIR* d = opendir(dir.c_str());
  if (!d) return Error{dir + ": " + std::strerror(errno)};
  std::lock_guard lock(mutex_);
  while (dirent* e = readdir(d)) {
    std::string file = e->d_name;
    if (!file.ends_with(".json")) continue;
    std::ifstream in(dir + "/" + file);
    std::stringstream text;
    text << in.rdbuf();
    auto record = parse_service_record(text.str());
    if (!record || record->spec.name + ".json" != file) {
      log_linef(LogPriority::error,
                "safe-kube-bridge: %s/%s: %s; left alone, its name kept taken (its replicas' jobs run on: cancel them, then "
                "move the file away and restart)",
                dir.c_str(), file.c_str(), record ? "its name is not its service's" : record.error().c_str());
      unreadable_.insert(file.substr(0, file.size() - 5));
      continue;
    }
    Service s;
    s.saved = text.str();
    s.record = std::move(*record);
    services_.emplace(s.record.spec.name, std::move(s));
  }
  closedir(d);
  publish();
  return ok_status();
}

void ServiceController::start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(wake_mutex_);
    while (!stopping_) {
      wake_pending_ = false;
      lock.unlock();
      pass();
      lock.lock();
      wake_.wait_for(lock, settings_.period, [this] { return stopping_ || wake_pending_; });
    }
  });
}

void ServiceController::stop_thread() {
  {
    std::lock_guard lock(wake_mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int ServiceController::start_budget() {
  std::time_t now = clock_();
  double per_s = settings_.starts_per_minute / 60.0;
  if (tokens_at_ == 0) start_tokens_ = settings_.starts_per_minute;
  else start_tokens_ = std::min<double>(settings_.starts_per_minute, start_tokens_ + per_s * static_cast<double>(now - tokens_at_));
  tokens_at_ = now;
  return static_cast<int>(start_tokens_);
}

void ServiceController::pass() {
  std::lock_guard lock(mutex_);
  if (services_.empty()) return;
  auto jobs = slurm_.jobs();
  auto nodes = slurm_.nodes();
  if (!jobs || !nodes) {
    log_linef(LogPriority::warning, "safe-kube-bridge: services: cannot read Slurm (%s); trying again",
              (!jobs ? jobs.error() : nodes.error()).c_str());
    return;
  }
  std::time_t now = clock_();
  std::map<std::string, NodeFacts> node_facts;
  std::set<std::string> usable, free;
  for (const auto& n : *nodes) {
    std::string host = !n.addr.empty() ? n.addr : !n.hostname.empty() ? n.hostname : n.name;
    node_facts[n.name] = {host, n.drain || n.down, n.down};
    if (!n.drain && !n.down) usable.insert(n.name);
    if (!n.drain && !n.down && !n.busy && !n.reserved) free.insert(n.name);
  }
  // The services' jobs, by service; a job counts only when its user owns the service (anyone can
  // write a Comment that looks like the bridge's mark).
  struct Marked {
    const SlurmJob* job;
    BridgeRecord mark;
  };
  std::map<std::string, std::vector<Marked>> marked;
  for (const auto& job : **jobs) {
    auto mark = parse_bridge_comment(job.comment);
    if (!mark || mark->service.empty()) continue;
    auto it = services_.find(mark->service);
    if (it == services_.end() || it->second.record.uid != job.user_id) continue;
    marked[mark->service].push_back({&job, *mark});
  }

  // Observe, then probe every running replica of every service at once.
  std::vector<ProbeRequest> probes;
  struct ProbeUse {
    Service* service;
    std::uint32_t job;
    enum { ready, live, metric } what;
  };
  std::vector<ProbeUse> uses;
  for (auto& [name, s] : services_) {
    s.seen = ServiceObservation{};
    s.seen.now = now;
    s.seen.usable_nodes = usable;
    s.seen.free_nodes = free;
    // A job that was ready has passed its liveness probe too (a restarted bridge forgot which).
    if (s.record.spec.service.readiness)
      for (const auto& x : s.record.replicas)
        if (x.job_id && x.ready_since) s.liveness_passed.insert(x.job_id);
    std::map<std::uint32_t, int> ports;
    for (const auto& x : s.record.replicas) {
      if (x.job_id) ports[x.job_id] = x.port;
      if (x.replacement_job) ports[x.replacement_job] = x.replacement_port;
    }
    for (const auto& [job, mark] : marked[name]) {
      ReplicaJobObservation o = observe(*job, mark.port, node_facts, now);
      s.seen.jobs[job->id] = o;
      auto port = ports.find(job->id);
      if (port == ports.end()) {
        s.seen.unclaimed[job->id] = mark.replica;
        continue;
      }
      if (!o.running || o.host.empty()) continue;
      const ServiceSpec& svc = s.record.spec.service;
      if (svc.readiness) {
        probes.push_back({o.host, port->second, svc.readiness->http_path});
        uses.push_back({&s, job->id, ProbeUse::ready});
      } else {
        s.seen.jobs[job->id].ready = true;
      }
      if (svc.liveness) {
        probes.push_back({o.host, port->second, svc.liveness->http_path});
        uses.push_back({&s, job->id, ProbeUse::live});
      }
      if (svc.scaling) {
        probes.push_back({o.host, port->second, "/metrics"});
        uses.push_back({&s, job->id, ProbeUse::metric});
      }
    }
  }
  std::vector<ProbeResult> results = prober_(probes, settings_.probe_deadline);
  for (std::size_t i = 0; i < uses.size() && i < results.size(); ++i) {
    Service& s = *uses[i].service;
    std::uint32_t id = uses[i].job;
    ReplicaJobObservation& o = s.seen.jobs[id];
    const ProbeResult& r = results[i];
    if (uses[i].what == ProbeUse::ready) {
      o.ready = r.passed();
    } else if (uses[i].what == ProbeUse::live) {
      // Failures count only once the probe has passed: a server still loading is not killed.
      if (r.passed()) s.liveness_passed.insert(id);
      o.liveness_failures = r.passed() || !s.liveness_passed.count(id) ? 0 : s.liveness_failures[id] + 1;
    } else if (r.passed()) {
      o.metric = metric_total(r.body, s.record.spec.service.scaling->metric);
    }
  }

  // Services plan in turn, a different one first each pass, so that no service's starts keep
  // another's waiting for the rate limit.
  int budget = start_budget();
  int started = 0;
  std::vector<Service*> order;
  for (auto& [name, s] : services_) order.push_back(&s);
  if (!order.empty()) std::rotate(order.begin(), order.begin() + static_cast<long>(first_++ % order.size()), order.end());
  for (Service* s : order) {
    s->liveness_failures.clear();
    for (const auto& [id, o] : s->seen.jobs)
      if (o.liveness_failures) s->liveness_failures[id] = o.liveness_failures;
    for (auto it = s->liveness_passed.begin(); it != s->liveness_passed.end();)
      it = s->seen.jobs.count(*it) ? std::next(it) : s->liveness_passed.erase(it);
    ServicePlan plan = plan_service(s->record, s->seen, budget);
    started += static_cast<int>(plan.starts.size());  // refused or not: each is an RPC slurmctld answers
    act(*s, plan);
    save(*s);
  }
  // A deleted service is forgotten once none of its jobs runs (its record kept it until then,
  // across restarts too, with its name taken).
  for (auto it = services_.begin(); it != services_.end();) {
    const Service& s = it->second;
    bool runs = std::any_of(s.seen.jobs.begin(), s.seen.jobs.end(), [](const auto& j) { return j.second.live; });
    if (!s.record.deleted || runs) {
      ++it;
      continue;
    }
    for (const auto& f : {settings_.state_dir + "/services/" + it->first + ".json", settings_.state_dir + "/endpoints/" + it->first + ".json"})
      if (unlink(f.c_str()) != 0 && errno != ENOENT)
        log_linef(LogPriority::error, "safe-kube-bridge: service %s: cannot remove %s: %s", it->first.c_str(), f.c_str(), std::strerror(errno));
    it = services_.erase(it);
  }
  start_tokens_ -= started;
  publish();
}

void ServiceController::act(Service& s, const ServicePlan& plan) {
  ServiceRecord& r = s.record;
  for (auto id : plan.cancels)
    if (Status cancelled = slurm_.cancel(id); !cancelled)
      log_linef(LogPriority::warning, "safe-kube-bridge: service %s: cannot cancel job %u: %s (tried again next pass)",
                r.spec.name.c_str(), id, cancelled.error().c_str());
  if (plan.starts.empty()) return;
  auto user = users_.by_uid(r.uid);
  for (const auto& start : plan.starts) {
    if (!user) {
      record_start_failed(r, start, "its user (uid " + std::to_string(r.uid) + ") is gone from the user database", s.seen.now);
      continue;
    }
    SlurmJobRequest request = replica_job_request(r.spec, *user, r.work_dir, start.index, start.port, start.excluded_nodes);
    auto submitted = slurm_.submit(request);
    if (!submitted) record_start_failed(r, start, submitted.error(), s.seen.now);
    else record_start(r, start, *submitted, s.seen.now);
  }
}

void ServiceController::save(Service& s) {
  std::string text = service_record_json(s.record);
  if (text != s.saved) {
    if (Status written = write_file_atomically(settings_.state_dir + "/services/" + s.record.spec.name + ".json", text, 0600); !written)
      log_linef(LogPriority::error, "safe-kube-bridge: service %s: cannot save its record: %s", s.record.spec.name.c_str(),
                written.error().c_str());
    else s.saved = std::move(text);
  }
  std::string endpoints = json_text(render_endpoints(s.record, s.seen).get());
  if (endpoints != s.endpoints_json) {
    if (Status written = write_file_atomically(settings_.state_dir + "/endpoints/" + s.record.spec.name + ".json", endpoints, 0644);
        !written)
      log_linef(LogPriority::error, "safe-kube-bridge: service %s: cannot write its endpoints file: %s", s.record.spec.name.c_str(),
                written.error().c_str());
    else s.endpoints_json = std::move(endpoints);
  }
}

void ServiceController::publish() {
  auto out = std::make_shared<Published>();
  long long running = 0, stopped = 0, desired = 0, ready = 0, looping = 0, restarts = 0;
  for (const auto& [name, s] : services_) {
    if (s.record.deleted) continue;  // gone for its user; kept here until its jobs end
    (s.record.stopped ? stopped : running) += 1;
    if (!s.record.stopped) desired += s.record.desired;
    for (const auto& x : s.record.replicas) {
      auto job = s.seen.jobs.find(x.job_id);
      ready += x.job_id && job != s.seen.jobs.end() && job->second.live && job->second.ready;
      looping += x.crash_looping;
      restarts += x.restarts;
    }
    Json view = render_service(s.record, s.seen);
    out->workloads.push_back({"svc-" + name, s.record.uid, service_phase(s.record, s.seen),
                              s.record.spec.options.workspace.value_or(""), json_text(view.get())});
    out->endpoints[name] = json_text(render_endpoints(s.record, s.seen).get());
    out->events[name] = {s.record.events.begin(), s.record.events.end()};
    LogSource& logs = out->logs[name];
    logs.uid = s.record.uid;
    logs.work_dir = s.record.work_dir;
    for (const auto& x : s.record.replicas)
      if (x.job_id || x.last_job) logs.jobs[x.index] = x.job_id ? x.job_id : x.last_job;
  }
  out->metrics =
      "# HELP safe_services Services (kind service) the bridge keeps, by state.\n"
      "# TYPE safe_services gauge\n"
      "safe_services{state=\"running\"} " + std::to_string(running) + "\n"
      "safe_services{state=\"stopped\"} " + std::to_string(stopped) + "\n"
      "# HELP safe_service_replicas Replicas of every service: wanted, ready, crash-looping.\n"
      "# TYPE safe_service_replicas gauge\n"
      "safe_service_replicas{state=\"desired\"} " + std::to_string(desired) + "\n"
      "safe_service_replicas{state=\"ready\"} " + std::to_string(ready) + "\n"
      "safe_service_replicas{state=\"crash_looping\"} " + std::to_string(looping) + "\n"
      "# HELP safe_service_replica_restarts Restarts of the replicas of the services that exist now.\n"
      "# TYPE safe_service_replica_restarts gauge\n"
      "safe_service_replica_restarts " + std::to_string(restarts) + "\n";
  std::lock_guard lock(published_mutex_);
  published_ = out;
}

std::string ServiceController::metrics_text() {
  std::lock_guard lock(published_mutex_);
  return published_->metrics;
}

CreateOutcome ServiceController::create(const WorkloadSpec& spec, const UserRecord& user, const std::string& work_dir) {
  std::lock_guard lock(mutex_);
  if (auto it = services_.find(spec.name); it != services_.end() && it->second.record.deleted)
    return {409, "a service named '" + spec.name + "' is being deleted (its jobs are ending); try again in a few seconds"};
  if (services_.count(spec.name) || unreadable_.count(spec.name))
    return {409, "a service named '" + spec.name + "' exists (service names are the cluster's, not each user's); choose another "
                 "name, or delete yours first"};
  int mine = 0;
  for (const auto& [name, s] : services_) mine += s.record.uid == user.uid && !s.record.deleted;
  if (mine >= settings_.max_services_per_user)
    return {422, "you have " + std::to_string(mine) + " services, the most one user may have; delete one first"};
  Service s;
  s.record.spec = spec;
  s.record.user = user.name;
  s.record.uid = user.uid;
  s.record.gid = user.gid;
  s.record.work_dir = work_dir;
  s.record.created = clock_();
  s.record.desired = spec.service.replicas;
  add_event(s.record, {s.record.created, "Created", -1, std::to_string(spec.service.replicas) + " replicas wanted"});
  s.seen.now = s.record.created;
  save(s);
  if (s.saved.empty()) return {503, "safe: cannot save the service's record under " + settings_.state_dir + "; ask an administrator"};
  services_.emplace(spec.name, std::move(s));
  publish();
  {
    std::lock_guard wake_lock(wake_mutex_);
    wake_pending_ = true;
  }
  wake_.notify_all();
  return {201, "svc-" + spec.name};
}

std::optional<std::string> ServiceController::endpoints(const std::string& id) {
  auto name = parse_service_workload_id(id);
  if (!name) return std::nullopt;
  std::shared_ptr<const Published> p;
  {
    std::lock_guard lock(published_mutex_);
    p = published_;
  }
  auto it = p->endpoints.find(*name);
  if (it == p->endpoints.end()) return std::nullopt;
  return it->second;
}

Result<WorkloadList> ServiceController::list() {
  std::lock_guard lock(published_mutex_);
  return WorkloadList(published_, &published_->workloads);
}

Result<std::optional<ListedWorkload>> ServiceController::find(const std::string& id) {
  std::lock_guard lock(published_mutex_);
  for (const auto& w : published_->workloads)
    if (w.id == id) return std::optional<ListedWorkload>(w);
  return std::optional<ListedWorkload>();
}

Result<EventList> ServiceController::events(const ListedWorkload& w) {
  EventList out{json_take(json_array()), ""};
  std::shared_ptr<const Published> p;
  {
    std::lock_guard lock(published_mutex_);
    p = published_;
  }
  auto it = p->events.find(w.id.substr(4));
  if (it == p->events.end()) return out;
  for (const auto& e : it->second) {
    WorkloadEvent ev{e.type, e.time, 1, (e.replica >= 0 ? "replica " + std::to_string(e.replica) + ": " : "") + e.message};
    json_t* rendered = render_event(ev);
    json_object_del(rendered, "attempt");
    if (e.replica >= 0) json_set(rendered, "replica", json_integer(e.replica));
    json_array_append_new(out.items.get(), rendered);
  }
  return out;
}

Result<std::string> ServiceController::stop(const ListedWorkload& w, bool remove) {
  std::lock_guard lock(mutex_);
  auto it = services_.find(w.id.substr(4));
  if (it == services_.end()) return Error{"safe: service " + w.id + " is gone"};
  Service& s = it->second;
  if (!s.record.stopped) {
    // Its jobs as Slurm has them now (the last pass's view misses the jobs it submitted), those
    // of the service's user that carry its mark only.
    auto jobs = slurm_.jobs();
    if (!jobs) return Error{"safe: cannot read jobs from Slurm to stop " + w.id + ": " + jobs.error() + "; try again shortly"};
    ServiceObservation now_seen;
    for (const auto& job : **jobs)
      if (auto mark = parse_bridge_comment(job.comment);
          mark && mark->service == it->first && job.user_id == s.record.uid && !has_ended(job))
        now_seen.jobs[job.id].live = true;
    act(s, stop_service(s.record, now_seen, clock_()));
  }
  // Deleted: gone for its user at once; its record, marked so, stays (across restarts too) until
  // no job of it runs, each pass cancelling what does (pass()).
  if (remove) s.record.deleted = true;
  save(s);
  publish();
  return std::string("Stopped");
}

Result<WorkloadLog> ServiceController::logs(const ListedWorkload& w, const LogRequest& request) {
  std::shared_ptr<const Published> p;
  {
    std::lock_guard lock(published_mutex_);
    p = published_;
  }
  std::string name = w.id.substr(4);
  auto it = p->logs.find(name);
  if (it == p->logs.end()) return Error{"safe: service " + w.id + " is gone"};
  int replica = request.replica < 0 ? 0 : request.replica;
  auto job = it->second.jobs.find(replica);
  if (job == it->second.jobs.end()) return Error{"replica " + std::to_string(replica) + " has had no job yet (see the workload's replicas)"};
  std::string path = it->second.work_dir + "/safe-bridge-" + name + "-r" + std::to_string(replica) + "-" + std::to_string(job->second) + ".out";
  auto text = read_output_(path, it->second.uid, request.tail_bytes);
  if (!text) return Error{"no output of replica " + std::to_string(replica) + " yet: " + text.error()};
  return WorkloadLog{std::move(*text), 1};
}

}  // namespace safe::bridge
