#include "kube-bridge/service_controller.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <cstdlib>

#include "common/atomic_file.hpp"
#include "common/daemon_log.hpp"
#include "kube-bridge/service_view.hpp"
#include "kube-bridge/slurm_workload.hpp"
#include "kube-bridge/workload_view.hpp"

namespace safe::bridge {
namespace {

Status make_dir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return Error{path + ": " + std::strerror(errno)};
  return ok_status();
}

struct NodeFacts {
  std::string host;
  bool unhealthy = false;
  bool down = false;
};

ReplicaJobObservation observe(const SlurmJob& job, const std::map<std::string, NodeFacts>& nodes) {
  ReplicaJobObservation o;
  o.live = !has_ended(job);
  o.running = job.state == SlurmJobState::running && !job.requeued;
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
  return o;
}

}  // namespace

ServiceController::ServiceController(ServiceSettings settings, SlurmCache& slurm, UserDirectory& users,
                                     SlurmTarget::OutputReader read_output, Prober prober, Clock clock)
    : settings_(std::move(settings)), slurm_(slurm), users_(users), read_output_(std::move(read_output)),
      prober_(std::move(prober)), clock_(std::move(clock)) {}

ServiceController::~ServiceController() { stop_thread(); }

Status ServiceController::load() {
  for (const char* sub : {"", "/services", "/endpoints"})
    if (auto made = make_dir(settings_.state_dir + sub); !made) return made;
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
      log_linef(LogPriority::error, "safe-kube-bridge: %s/%s: %s; left alone (move it away, or fix it and restart)", dir.c_str(),
                file.c_str(), record ? "its name is not its service's" : record.error().c_str());
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
      lock.unlock();
      pass();
      lock.lock();
      wake_.wait_for(lock, settings_.period, [this] { return stopping_; });
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
  std::map<std::string, NodeFacts> node_facts;
  std::map<std::string, int> per_address;
  bool shared_hosts = false;
  for (const auto& n : *nodes) {
    std::string host = !n.addr.empty() ? n.addr : !n.hostname.empty() ? n.hostname : n.name;
    node_facts[n.name] = {host, n.drain || n.down, n.down};
    shared_hosts = shared_hosts || ++per_address[host] > 1;
  }
  // The services' jobs, by service; a job counts only when its user owns the service (anyone can
  // write a Comment that looks like the bridge's mark).
  std::map<std::string, std::vector<std::pair<const SlurmJob*, int>>> marked;
  for (const auto& job : **jobs) {
    auto mark = parse_bridge_comment(job.comment);
    if (!mark || mark->service.empty()) continue;
    auto it = services_.find(mark->service);
    if (it == services_.end() || it->second.record.uid != job.user_id) continue;
    marked[mark->service].push_back({&job, mark->replica});
  }

  // Observe, then probe every running replica of every service at once.
  std::time_t now = clock_();
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
    s.seen.shared_hosts = shared_hosts;
    std::map<std::uint32_t, int> ports;
    for (const auto& x : s.record.replicas) {
      if (x.job_id) ports[x.job_id] = x.port;
      if (x.replacement_job) ports[x.replacement_job] = x.replacement_port;
    }
    for (auto [job, replica] : marked[name]) {
      ReplicaJobObservation o = observe(*job, node_facts);
      s.seen.jobs[job->id] = o;
      auto port = ports.find(job->id);
      if (port == ports.end()) {
        s.seen.unclaimed[job->id] = replica;
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
    ReplicaJobObservation& o = s.seen.jobs[uses[i].job];
    const ProbeResult& r = results[i];
    if (uses[i].what == ProbeUse::ready) o.ready = r.passed();
    else if (uses[i].what == ProbeUse::live) o.liveness_failures = r.passed() ? 0 : s.liveness_failures[uses[i].job] + 1;
    else if (r.passed()) o.metric = metric_total(r.body, s.record.spec.service.scaling->metric);
  }

  int budget = start_budget();
  int budget_before = budget;
  for (auto& [name, s] : services_) {
    s.liveness_failures.clear();
    for (const auto& [id, o] : s.seen.jobs)
      if (o.liveness_failures) s.liveness_failures[id] = o.liveness_failures;
    ServicePlan plan = plan_service(s.record, s.seen, budget);
    act(s, plan);
    save(s);
  }
  start_tokens_ -= budget_before - budget;
  publish();
}

void ServiceController::act(Service& s, const ServicePlan& plan) {
  ServiceRecord& r = s.record;
  for (auto id : plan.cancels)
    if (Status cancelled = slurm_.cancel(id); !cancelled)
      log_linef(LogPriority::warning, "safe-kube-bridge: service %s: cannot cancel job %u: %s", r.spec.name.c_str(), id,
                cancelled.error().c_str());
  if (plan.starts.empty()) return;
  auto user = users_.by_uid(r.uid);
  for (const auto& start : plan.starts) {
    if (!user) {
      record_start_failed(r, start, "its user (uid " + std::to_string(r.uid) + ") is gone from the user database", s.seen.now);
      continue;
    }
    std::vector<std::string> excluded = start.excluded_nodes;
    SlurmJobRequest request = replica_job_request(r.spec, *user, r.work_dir, start.index, start.port, excluded);
    auto submitted = slurm_.submit(request);
    if (!submitted) record_start_failed(r, start, submitted.error(), s.seen.now);
    else record_start(r, start, *submitted, s.seen.now);
  }
}

void ServiceController::save(Service& s) {
  std::string text = service_record_json(s.record);
  if (text != s.saved) {
    if (Status written = write_file_atomically(settings_.state_dir + "/services/" + s.record.spec.name + ".json", text); !written)
      log_linef(LogPriority::error, "safe-kube-bridge: service %s: cannot save its record: %s", s.record.spec.name.c_str(),
                written.error().c_str());
    else s.saved = std::move(text);
  }
  std::string endpoints = json_text(render_endpoints(s.record, s.seen).get());
  if (endpoints != s.endpoints_json) {
    if (Status written = write_file_atomically(settings_.state_dir + "/endpoints/" + s.record.spec.name + ".json", endpoints); !written)
      log_linef(LogPriority::error, "safe-kube-bridge: service %s: cannot write its endpoints file: %s", s.record.spec.name.c_str(),
                written.error().c_str());
    else s.endpoints_json = std::move(endpoints);
  }
}

void ServiceController::publish() {
  auto out = std::make_shared<Published>();
  for (const auto& [name, s] : services_) {
    Json view = render_service(s.record, s.seen);
    out->workloads.push_back({"svc-" + name, s.record.uid, service_phase(s.record, s.seen),
                              s.record.spec.options.workspace.value_or(""), json_text(view.get())});
    out->endpoints[name] = json_text(render_endpoints(s.record, s.seen).get());
    out->events[name] = {s.record.events.begin(), s.record.events.end()};
  }
  std::lock_guard lock(published_mutex_);
  published_ = out;
}

Result<std::string> ServiceController::create(const WorkloadSpec& spec, const UserRecord& user, const std::string& work_dir) {
  std::lock_guard lock(mutex_);
  if (services_.count(spec.name))
    return Error{"a service named '" + spec.name + "' exists; choose another name, or delete it first", true};
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
  if (s.saved.empty()) return Error{"safe: cannot save the service's record under " + settings_.state_dir + "; ask an administrator"};
  services_.emplace(spec.name, std::move(s));
  publish();
  wake_.notify_all();
  return "svc-" + spec.name;
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
  if (!s.record.stopped) act(s, stop_service(s.record, clock_()));
  if (remove) {
    std::string name = it->first;
    bool left = false;
    for (const auto& f : {settings_.state_dir + "/services/" + name + ".json", settings_.state_dir + "/endpoints/" + name + ".json"})
      if (unlink(f.c_str()) != 0 && errno != ENOENT) left = true;
    if (left) log_linef(LogPriority::error, "safe-kube-bridge: service %s: cannot remove its files under %s", name.c_str(),
                        settings_.state_dir.c_str());
    services_.erase(it);
  } else {
    save(s);
  }
  publish();
  return std::string("Stopped");
}

Result<WorkloadLog> ServiceController::logs(const ListedWorkload& w, const LogRequest& request) {
  std::uint32_t job_id = 0;
  uid_t uid = 0;
  std::string work_dir, name = w.id.substr(4);
  int replica = request.replica < 0 ? 0 : request.replica;
  {
    std::lock_guard lock(mutex_);
    auto it = services_.find(name);
    if (it == services_.end()) return Error{"safe: service " + w.id + " is gone"};
    for (const auto& x : it->second.record.replicas)
      if (x.index == replica) job_id = x.job_id;
    uid = it->second.record.uid;
    work_dir = it->second.record.work_dir;
  }
  if (!job_id) return Error{"replica " + std::to_string(replica) + " has no job now (see the workload's replicas)"};
  std::string path = work_dir + "/safe-bridge-" + name + "-r" + std::to_string(replica) + "-" + std::to_string(job_id) + ".out";
  auto text = read_output_(path, uid, request.tail_bytes);
  if (!text) return Error{"no output of replica " + std::to_string(replica) + " yet: " + text.error()};
  return WorkloadLog{std::move(*text), 1};
}

}  // namespace safe::bridge
