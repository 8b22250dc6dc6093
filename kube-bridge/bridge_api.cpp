#include "kube-bridge/bridge_api.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <ctime>

#include "common/admission.hpp"
#include "common/job_metadata.hpp"
#include "common/json_value.hpp"
#include "kube-bridge/slurm_workload.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {
namespace {

constexpr std::size_t kDefaultLogBytes = 1 << 20;
constexpr std::size_t kMaxLogBytes = 16 << 20;

ApiResponse json_response(int status, const json_t* body) { return {status, json_text(body), "application/json", {}, ""}; }

json_t* time_json(std::time_t t) {
  if (t <= 0) return json_null();
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return json_string(buf);
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  while (pos < path.size()) {
    std::size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    if (next > pos) parts.push_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  return parts;
}

ApiResponse field_errors(int status, const std::string& message, const std::vector<FieldError>& errors) {
  Json body = json_take(json_object());
  json_set(body.get(), "error", json_str(message));
  json_t* fields = json_array();
  for (const auto& e : errors) {
    json_t* f = json_object();
    json_set(f, "path", json_str(e.path));
    json_set(f, "message", json_str(e.message));
    json_array_append_new(fields, f);
  }
  json_set(body.get(), "fields", fields);
  return json_response(status, body.get());
}

ApiResponse method_not_allowed(const std::string& allow) {
  ApiResponse r = error_response(405, "method not allowed here; allowed: " + allow);
  r.headers.emplace_back("Allow", allow);
  return r;
}

std::optional<long long> query_int(const std::string& text, long long lo, long long hi) {
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

bool visible_to(const SlurmJob& job, const Principal& who) { return who.admin || job.user_id == who.user.uid; }

long long meta_submitted(const SlurmJob& job) {
  auto meta = parse_job_metadata(job.admin_comment);
  return meta ? meta->submitted : 0;
}

}  // namespace

ApiResponse error_response(int status, const std::string& message) {
  Json body = json_take(json_object());
  json_set(body.get(), "error", json_str(message));
  return json_response(status, body.get());
}

namespace {

json_t* workload_json(const SlurmJob& job, const BridgeRecord& record, const std::string& user) {
  json_t* w = json_object();
  json_set(w, "id", json_str(slurm_workload_id(job.id)));
  json_set(w, "name", json_str(job.name));
  json_set(w, "target", json_string("slurm"));
  json_set(w, "user", json_str(user));
  auto meta = parse_job_metadata(job.admin_comment);
  json_set(w, "workspace", meta && !meta->settings.workspace.empty() ? json_str(meta->settings.workspace) : json_null());
  json_set(w, "phase", json_str(to_string(workload_phase(job))));
  json_set(w, "slurmState", json_str(shown_state(job)));
  json_set(w, "reason", json_str(job.reason));
  json_set(w, "attempt", json_integer(job.restart_count + 1));
  json_set(w, "maxRetries", meta ? json_integer(meta->settings.retries) : json_null());
  json_set(w, "health", meta ? json_str(to_string(meta->settings.health)) : json_null());
  json_set(w, "checkpointDir", meta && !meta->settings.ckpt_dir.empty() ? json_str(meta->settings.ckpt_dir) : json_null());
  json_set(w, "nodes", json_str(job.nodes));
  json_set(w, "nodeCount", json_integer(job.num_nodes));
  json_set(w, "excludedNodes", json_str(job.exc_nodes));
  json_set(w, "exitCode", has_ended(job) ? json_integer(shell_exit_status(job.exit_code)) : json_null());
  json_set(w, "submitTime", time_json(job.submit_time));
  json_set(w, "startTime", waiting_to_start(job) ? json_null() : time_json(job.start_time));
  json_set(w, "endTime", has_ended(job) ? time_json(job.end_time) : json_null());
  json_t* labels = json_object();
  for (const auto& [k, v] : record.labels) json_set(labels, k.c_str(), json_str(v));
  json_set(w, "labels", labels);
  return w;
}

json_t* event(const char* type, std::time_t at, int attempt, const std::string& message) {
  json_t* e = json_object();
  json_set(e, "type", json_string(type));
  json_set(e, "time", time_json(at));
  json_set(e, "attempt", json_integer(attempt));
  json_set(e, "message", json_str(message));
  return e;
}

// A workload's history as Slurm alone knows it; safed's classifications join it when the
// controller is deployed (see docs/rest-api.md).
json_t* slurm_events(const SlurmJob& job) {
  json_t* events = json_array();
  int attempt = job.restart_count + 1;
  json_array_append_new(events, event("Submitted", job.submit_time, 1, "submitted to Slurm as job " + std::to_string(job.id)));
  auto meta = parse_job_metadata(job.admin_comment);
  if (job.restart_count > 0) {
    std::string why = meta && !meta->last_failure.empty() ? ": " + meta->last_failure : "";
    json_array_append_new(events, event("Requeued", 0, attempt,
                                        "requeued " + std::to_string(job.restart_count) + " time(s)" + why));
  }
  if (!waiting_to_start(job) && job.start_time > 0)
    json_array_append_new(events, event("Started", job.start_time, attempt, "running on " + job.nodes));
  if (has_ended(job)) {
    std::string msg = std::string(shown_state(job)) + ", exit code " + std::to_string(shell_exit_status(job.exit_code));
    if (!job.reason.empty()) msg += " (" + job.reason + ")";
    json_array_append_new(events, event(std::string(to_string(workload_phase(job))).c_str(), job.end_time, attempt, msg));
  }
  return events;
}

json_t* kube_workload_json(const KubeWorkload& w) {
  json_t* j = json_object();
  json_set(j, "id", json_str("kube-" + w.spec.name));
  json_set(j, "name", json_str(w.spec.name));
  json_set(j, "target", json_string("kubernetes"));
  json_set(j, "user", json_str(w.user));
  json_set(j, "workspace", w.settings.workspace.empty() ? json_null() : json_str(w.settings.workspace));
  json_set(j, "phase", json_str(to_string(w.phase)));
  json_set(j, "attempt", json_integer(w.attempt));
  json_set(j, "maxRetries", json_integer(w.settings.retries));
  json_set(j, "health", json_str(to_string(w.settings.health)));
  json_set(j, "checkpointDir", w.settings.ckpt_dir.empty() ? json_null() : json_str(w.settings.ckpt_dir));
  json_set(j, "nodes", json_str(w.nodes));
  json_set(j, "nodeCount", json_integer(w.spec.nodes));
  std::string avoid;
  for (const auto& n : w.avoid_nodes) avoid += (avoid.empty() ? "" : ",") + n;
  json_set(j, "excludedNodes", json_str(avoid));
  json_set(j, "submitTime", time_json(w.submit_time));
  json_t* labels = json_object();
  for (const auto& [k, v] : w.spec.labels) json_set(labels, k.c_str(), json_str(v));
  json_set(j, "labels", labels);
  return j;
}

}  // namespace

ApiResponse BridgeApi::handle(const ApiRequest& request) {
  std::vector<std::string> parts = split_path(request.path);
  if (parts.size() == 1 && (parts[0] == "healthz" || parts[0] == "metrics" || parts[0] == "openapi.json")) {
    if (request.method != "GET" && request.method != "HEAD") return method_not_allowed("GET");
    if (parts[0] == "healthz") return {200, "{\"status\":\"ok\"}", "application/json", {}, "-"};
    if (parts[0] == "metrics") return {200, metrics_.render(), "text/plain; version=0.0.4", {}, "-"};
    return {200, settings_.openapi_document, "application/json", {}, "-"};
  }
  if (parts.size() < 2 || parts[0] != "api" || parts[1] != "v1") {
    ApiResponse r = error_response(404, "no such resource; the API lives under /api/v1 (see /openapi.json)");
    r.user = "-";
    return r;
  }
  AuthResult auth = auth_.authenticate(request.authorization);
  if (!auth.principal) {
    metrics_.count_auth_failure();
    ApiResponse r = error_response(401, auth.error);
    r.headers.emplace_back("WWW-Authenticate", "Bearer, Munge");
    r.user = "-";
    return r;
  }
  ApiResponse r = route(request, *auth.principal, std::vector<std::string>(parts.begin() + 2, parts.end()));
  r.user = auth.principal->user.name;
  return r;
}

ApiResponse BridgeApi::route(const ApiRequest& req, const Principal& who, const std::vector<std::string>& p) {
  const std::string& m = req.method;
  if (p.empty()) return error_response(404, "no such resource; see /openapi.json");
  if (p[0] == "workloads") {
    if (p.size() == 1) {
      if (m == "POST") return create_workload(req, who);
      if (m == "GET") return list_workloads(req, who);
      return method_not_allowed("GET, POST");
    }
    if (p.size() == 2) {
      if (m == "GET") return workload_action(req, who, p[1], "get");
      if (m == "DELETE") return workload_action(req, who, p[1], "delete");
      return method_not_allowed("GET, DELETE");
    }
    if (p.size() == 3 && p[2] == "stop") {
      if (m != "POST") return method_not_allowed("POST");
      return workload_action(req, who, p[1], "stop");
    }
    if (p.size() == 3 && (p[2] == "logs" || p[2] == "events")) {
      if (m != "GET") return method_not_allowed("GET");
      return workload_action(req, who, p[1], p[2]);
    }
  }
  if (p[0] == "workspaces" && p.size() <= 2) {
    if (m != "GET") return method_not_allowed("GET");
    return list_workspaces(who, p.size() == 2 ? p[1] : "");
  }
  if (p[0] == "nodes" && p.size() == 1) {
    if (m != "GET") return method_not_allowed("GET");
    return list_nodes();
  }
  return error_response(404, "no such resource; see /openapi.json");
}

ApiResponse BridgeApi::create_workload(const ApiRequest& req, const Principal& who) {
  SpecParse parsed = parse_workload_spec(req.body);
  if (parsed.malformed) return field_errors(400, "the request body is not valid JSON", parsed.errors);
  if (!parsed.spec) return field_errors(422, "invalid workload spec", parsed.errors);
  const WorkloadSpec& spec = *parsed.spec;
  if (spec.target == WorkloadTarget::kubernetes && !kube_)
    return field_errors(422, "invalid workload spec",
                        {{"target", "the kubernetes target is not configured on this bridge (kube_bridge.kubernetes); use target slurm"}});

  // job_submit_safe decides inside slurmctld, for the job's user. libslurm hands back only its
  // error code, not its message: the same pure policy, run here, says why.
  AdmissionRequest admission;
  admission.options = spec.options;
  admission.gpus = static_cast<long long>(spec.nodes) * spec.gpus_per_node;
  AdmissionDecision decision = admit_job(settings_.config, admission, JobUser{who.user.name, who.user.groups});

  if (spec.target == WorkloadTarget::kubernetes) {
    // No slurmctld decides here: the policy the job_submit plugin applies on Slurm applies here.
    if (!decision.accepted) return error_response(403, decision.message);
    if (auto problem = kube_->create(spec, decision.settings, who.user.name, who.user.uid, who.user.gid))
      return error_response(problem->status, problem->message);
    metrics_.count_created(true);
    Json body = json_take(json_object());
    json_set(body.get(), "id", json_str("kube-" + spec.name));
    json_set(body.get(), "name", json_str(spec.name));
    json_set(body.get(), "target", json_string("kubernetes"));
    json_set(body.get(), "phase", json_string("Pending"));
    if (!decision.message.empty()) json_set(body.get(), "notice", json_str(decision.message));
    ApiResponse r = json_response(201, body.get());
    r.headers.emplace_back("Location", "/api/v1/workloads/kube-" + spec.name);
    return r;
  }

  auto work_dir = work_dirs_.prepare(who.user);
  if (!work_dir) return error_response(422, work_dir.error());
  SlurmJobRequest job = slurm_job_request(spec, who.user, *work_dir);
  auto submitted = slurm_.submit(job);
  if (!submitted) {
    if (submitted.refused())
      return error_response(403, !decision.accepted ? decision.message
                                                    : "safe: Slurm refused the workload (" + submitted.error() +
                                                          "); ask an administrator to check slurmctld's log");
    return error_response(422, "safe: Slurm rejected the workload: " + submitted.error() +
                                   "; check the spec against the partition's limits (sinfo) and try again");
  }
  metrics_.count_created(false);
  Json body = json_take(json_object());
  json_set(body.get(), "id", json_str(slurm_workload_id(*submitted)));
  json_set(body.get(), "name", json_str(spec.name));
  json_set(body.get(), "target", json_string("slurm"));
  json_set(body.get(), "phase", json_string("Pending"));
  json_set(body.get(), "slurmJobId", json_integer(*submitted));
  if (!decision.message.empty()) json_set(body.get(), "notice", json_str(decision.message));
  ApiResponse r = json_response(201, body.get());
  r.headers.emplace_back("Location", "/api/v1/workloads/" + slurm_workload_id(*submitted));
  return r;
}

ApiResponse BridgeApi::list_workloads(const ApiRequest& req, const Principal& who) {
  std::string workspace, target;
  std::optional<WorkloadPhase> state;
  long long limit = 100, offset = 0;
  std::vector<FieldError> errors;
  for (const auto& [k, v] : req.query) {
    if (k == "workspace") workspace = v;
    else if (k == "state") {
      state = parse_workload_phase(v);
      if (!state) errors.push_back({"query.state", "expects Pending, Running, Stopped, Succeeded or Failed"});
    }
    else if (k == "target") {
      target = v;
      if (v != "slurm" && v != "kubernetes") errors.push_back({"query.target", "expects slurm or kubernetes"});
    } else if (k == "limit") {
      auto n = query_int(v, 1, 1000);
      if (!n) errors.push_back({"query.limit", "expects an integer 1..1000"});
      else limit = *n;
    } else if (k == "offset") {
      auto n = query_int(v, 0, 1 << 30);
      if (!n) errors.push_back({"query.offset", "expects a non-negative integer"});
      else offset = *n;
    } else {
      errors.push_back({"query." + k.substr(0, 80), "unknown parameter; expected workspace, state, target, limit or offset"});
    }
  }
  if (!errors.empty()) return field_errors(422, "invalid query", errors);
  auto jobs = slurm_.jobs();
  if (!jobs)
    return error_response(503, "safe: cannot read jobs from Slurm: " + jobs.error() + "; retry shortly");
  auto index = workload_index(*jobs);

  std::vector<const IndexedWorkload*> selected;
  std::vector<IndexedWorkload> kube_items;  // rendered per request: few, and they change often
  if (kube_ && target != "slurm") {
    for (const auto& w : kube_->list()) {
      if (!(who.admin || w.uid == who.user.uid)) continue;
      if (state && w.phase != *state) continue;
      if (!workspace.empty() && w.settings.workspace != workspace) continue;
      Json view = json_take(kube_workload_json(w));
      kube_items.push_back({0, w.uid, w.phase, w.settings.workspace, json_text(view.get())});
    }
  }
  {
    std::lock_guard lock(deleted_mutex_);
    for (const auto& w : index->workloads) {
      if (!(who.admin || w.uid == who.user.uid) || deleted_.count(w.job_id)) continue;
      if (target == "kubernetes") continue;
      if (state && w.phase != *state) continue;
      if (!workspace.empty() && w.workspace != workspace) continue;
      selected.push_back(&w);
    }
  }
  for (const auto& k : kube_items) selected.push_back(&k);
  std::string body = "{\"items\":[";
  std::size_t end = std::min(selected.size(), static_cast<std::size_t>(offset + limit));
  for (std::size_t i = static_cast<std::size_t>(offset); i < end; ++i) {
    if (i > static_cast<std::size_t>(offset)) body += ',';
    body += selected[i]->json;
  }
  body += "],\"total\":" + std::to_string(selected.size()) + ",\"nextOffset\":";
  body += offset + limit < static_cast<long long>(selected.size()) ? std::to_string(offset + limit) : "null";
  body += "}";
  return {200, std::move(body), "application/json", {}, ""};
}

std::shared_ptr<const BridgeApi::WorkloadIndex> BridgeApi::workload_index(const JobSnapshot& snapshot) {
  {
    std::lock_guard lock(index_mutex_);
    if (index_ && index_->snapshot == snapshot) return index_;
  }
  auto index = std::make_shared<WorkloadIndex>();
  index->snapshot = snapshot;
  {
    // A deleted workload Slurm no longer knows needs hiding no more.
    std::set<std::uint32_t> present;
    for (const auto& job : *snapshot) present.insert(job.id);
    std::lock_guard lock(deleted_mutex_);
    for (auto it = deleted_.begin(); it != deleted_.end();) it = present.count(*it) ? std::next(it) : deleted_.erase(it);
  }
  for (const auto& job : *snapshot) {
    auto record = parse_bridge_comment(job.comment);
    if (!record) continue;
    auto user = users_.by_uid(job.user_id);
    auto meta = parse_job_metadata(job.admin_comment);
    Json view = json_take(workload_json(job, *record, user ? user->name : std::to_string(job.user_id)));
    index->workloads.push_back({job.id, job.user_id, workload_phase(job), meta ? meta->settings.workspace : "",
                                json_text(view.get())});
  }
  std::lock_guard lock(index_mutex_);
  index_ = index;
  return index;
}

ApiResponse BridgeApi::workload_action(const ApiRequest& req, const Principal& who, const std::string& id,
                                       const std::string& action) {
  // The same answer for a malformed id, another user's workload and a missing one.
  ApiResponse not_found = error_response(404, "no workload '" + id.substr(0, 64) + "' visible to you; list yours with GET /api/v1/workloads");
  if (kube_ && id.starts_with("kube-")) return kube_workload_action(req, who, id.substr(5), action);
  auto job_id = parse_slurm_workload_id(id);
  if (!job_id) return not_found;
  {
    std::lock_guard lock(deleted_mutex_);
    if (deleted_.count(*job_id)) return not_found;
  }
  auto jobs = slurm_.jobs();
  if (!jobs)
    return error_response(503, "safe: cannot read jobs from Slurm: " + jobs.error() + "; retry shortly");
  const SlurmJob* job = nullptr;
  for (const auto& j : **jobs)
    if (j.id == *job_id) job = &j;
  if (!job || !visible_to(*job, who)) return not_found;
  auto record = parse_bridge_comment(job->comment);
  if (!record) return not_found;
  auto user = users_.by_uid(job->user_id);
  std::string user_name = user ? user->name : std::to_string(job->user_id);

  if (action == "get") {
    Json w = json_take(workload_json(*job, *record, user_name));
    return json_response(200, w.get());
  }
  if (action == "events") {
    Json body = json_take(json_object());
    json_set(body.get(), "id", json_str(id));
    json_t* items = slurm_events(*job);
    bool from_safed = false;
    if (history_)
      if (auto doc = history_->job_history(job->id, meta_submitted(*job))) from_safed = append_controller_events(*doc, items);
    json_set(body.get(), "items", items);
    json_set(body.get(), "sources", json_string(from_safed ? "slurm,safed" : "slurm"));
    return json_response(200, body.get());
  }
  if (action == "stop" || action == "delete") {
    if (!has_ended(*job)) {
      if (Status cancelled = slurm_.cancel(job->id); !cancelled)
        return error_response(502, "safe: Slurm did not cancel job " + std::to_string(job->id) + ": " + cancelled.error());
    }
    if (action == "delete") {
      std::lock_guard lock(deleted_mutex_);
      deleted_.insert(job->id);
    }
    Json body = json_take(json_object());
    json_set(body.get(), "id", json_str(id));
    json_set(body.get(), "phase", json_str(has_ended(*job) ? to_string(workload_phase(*job)) : "Stopping"));
    if (action == "delete") json_set(body.get(), "deleted", json_true());
    return json_response(action == "delete" ? 200 : 202, body.get());
  }
  // logs
  std::size_t tail = kDefaultLogBytes;
  for (const auto& [k, v] : req.query) {
    if (k == "attempt") {
      auto n = query_int(v, 1, 1000);
      if (!n) return field_errors(422, "invalid query", {{"query.attempt", "expects an integer 1..1000"}});
      if (*n > job->restart_count + 1)
        return error_response(404, "attempt " + v + " has not run; the workload is at attempt " + std::to_string(job->restart_count + 1));
    } else if (k == "tailBytes") {
      auto n = query_int(v, 1, kMaxLogBytes);
      if (!n) return field_errors(422, "invalid query", {{"query.tailBytes", "expects an integer 1..16777216"}});
      tail = static_cast<std::size_t>(*n);
    } else {
      return field_errors(422, "invalid query", {{"query." + k.substr(0, 80), "unknown parameter; expected attempt or tailBytes"}});
    }
  }
  std::string path = expand_output_path(*job, user_name);
  // The file is written by the job as its user; the bridge reads it as root. Refuse links and
  // files that the job's user does not own, so a workload cannot make the bridge read others'.
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (waiting_to_start(*job)) return error_response(404, "no output yet: the workload has not started");
    return error_response(404, "safe: the workload's output file is not readable here (" + path + ")");
  }
  struct stat st{};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != job->user_id) {
    ::close(fd);
    return error_response(404, "safe: the workload's output file is not a regular file owned by its user; not shown");
  }
  off_t start = st.st_size > static_cast<off_t>(tail) ? st.st_size - static_cast<off_t>(tail) : 0;
  std::string data(static_cast<std::size_t>(st.st_size - start), '\0');
  ssize_t got = pread(fd, data.data(), data.size(), start);
  ::close(fd);
  data.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  ApiResponse r{200, std::move(data), "text/plain; charset=utf-8", {}, ""};
  // Slurm requeues append to one file (--open-mode=append): every attempt's output is in it.
  r.headers.emplace_back("X-Safe-Log-Attempts", std::to_string(job->restart_count + 1));
  return r;
}

ApiResponse BridgeApi::list_workspaces(const Principal& who, const std::string& only) {
  auto licenses = slurm_.licenses();
  Json items = json_take(json_array());
  for (const auto& w : settings_.config.workspaces) {
    if (!only.empty() && w.name != only) continue;
    if (!who.admin && !is_member(w, JobUser{who.user.name, who.user.groups})) continue;
    json_t* j = json_object();
    json_set(j, "name", json_str(w.name));
    json_set(j, "gpuQuota", json_integer(w.gpu_quota));
    json_t* used = json_null();
    if (licenses && w.gpu_quota > 0)
      for (const auto& l : *licenses)
        if (l.name == workspace_license(w.name)) used = json_integer(l.in_use);
    json_set(j, "gpusInUse", used);
    json_set(j, "partition", json_str(w.partition));
    json_set(j, "account", json_str(w.account));
    json_set(j, "qos", json_str(w.qos));
    json_set(j, "defaultRetries", json_integer(w.default_retries));
    json_set(j, "maxRetries", json_integer(w.max_retries));
    json_set(j, "defaultHealth", json_str(to_string(w.default_health)));
    json_t* members = json_object();
    json_t* users = json_array();
    for (const auto& u : w.users) json_array_append_new(users, json_str(u));
    json_t* groups = json_array();
    for (const auto& g : w.groups) json_array_append_new(groups, json_str(g));
    json_set(members, "users", users);
    json_set(members, "groups", groups);
    json_set(j, "members", members);
    json_array_append_new(items.get(), j);
  }
  if (!only.empty()) {
    if (json_array_size(items.get()) == 0)
      return error_response(404, "no workspace '" + only.substr(0, 64) + "' visible to you; list yours with GET /api/v1/workspaces");
    return json_response(200, json_array_get(items.get(), 0));
  }
  Json body = json_take(json_object());
  json_set(body.get(), "items", json_incref(items.get()));
  return json_response(200, body.get());
}

ApiResponse BridgeApi::list_nodes() {
  auto nodes = slurm_.nodes();
  if (!nodes) return error_response(503, "safe: cannot read nodes from Slurm: " + nodes.error() + "; retry shortly");
  Json body = json_take(json_object());
  Json items = json_take(json_array());
  for (const auto& n : *nodes) {
    json_t* j = json_object();
    json_set(j, "name", json_str(n.name));
    json_set(j, "target", json_string("slurm"));
    json_set(j, "state", json_str(n.state));
    json_set(j, "reason", json_str(n.reason));
    json_set(j, "gres", json_str(n.gres));
    json_set(j, "cpus", json_integer(n.cpus));
    bool unhealthy = n.state.find("DRAIN") != std::string::npos || n.state.starts_with("DOWN") ||
                     n.state.find("FAIL") != std::string::npos;
    json_set(j, "health", json_string(unhealthy ? "unhealthy" : "healthy"));
    // SaFE's own drains carry reasons starting with "SaFE" (safe-prolog, safe-healthcheck).
    json_set(j, "safeDrained", json_boolean(unhealthy && n.reason.starts_with("SaFE")));
    json_array_append_new(items.get(), j);
  }
  if (kube_) {
    // Half a list would read as "these are all the nodes": the Kubernetes half is there, or the
    // call fails as for Slurm's.
    auto kube_nodes = kube_->nodes();
    if (!kube_nodes) return error_response(503, "safe: cannot read nodes from Kubernetes: " + kube_nodes.error() + "; retry shortly");
    for (const auto& n : *kube_nodes) {
      json_t* j = json_object();
      json_set(j, "name", json_str(n.name));
      json_set(j, "target", json_string("kubernetes"));
      json_set(j, "state", json_string(n.ready ? "Ready" : "NotReady"));
      json_set(j, "reason", json_str(n.marked_unhealthy ? "SaFE: node_fault" : ""));
      json_set(j, "health", json_string(n.ready && !n.marked_unhealthy ? "healthy" : "unhealthy"));
      json_set(j, "safeDrained", json_boolean(n.marked_unhealthy));
      json_array_append_new(items.get(), j);
    }
  }
  json_set(body.get(), "items", items.release());
  return json_response(200, body.get());
}

ApiResponse BridgeApi::kube_workload_action(const ApiRequest& req, const Principal& who, const std::string& name,
                                            const std::string& action) {
  auto w = kube_->get(name);
  if (!w || !(who.admin || w->uid == who.user.uid))
    return error_response(404, "no workload 'kube-" + name.substr(0, 64) + "' visible to you; list yours with GET /api/v1/workloads");
  if (action == "get") {
    Json view = json_take(kube_workload_json(*w));
    return json_response(200, view.get());
  }
  if (action == "events") {
    Json body = json_take(json_object());
    json_set(body.get(), "id", json_str("kube-" + name));
    json_t* items = json_array();
    for (const auto& e : w->events) json_array_append_new(items, event(e.type.c_str(), e.time, e.attempt, e.message));
    json_set(body.get(), "items", items);
    return json_response(200, body.get());
  }
  if (action == "stop" || action == "delete") {
    if (Status stopped = kube_->stop(name, action == "delete"); !stopped)
      return error_response(502, "safe: " + stopped.error());
    Json body = json_take(json_object());
    json_set(body.get(), "id", json_str("kube-" + name));
    json_set(body.get(), "phase", json_string(action == "delete" ? "Deleted" : "Stopped"));
    return json_response(action == "delete" ? 200 : 202, body.get());
  }
  int attempt = 0;
  for (const auto& [k, v] : req.query) {
    auto n = k == "attempt" ? query_int(v, 1, 1000) : std::nullopt;
    if (!n) return field_errors(422, "invalid query", {{"query." + k.substr(0, 80), "expected attempt=1..1000"}});
    attempt = static_cast<int>(*n);
  }
  auto text = kube_->logs(name, attempt);
  if (!text) return error_response(404, "safe: no logs: " + text.error());
  ApiResponse r{200, std::move(*text), "text/plain; charset=utf-8", {}, ""};
  return r;
}

}  // namespace safe::bridge
