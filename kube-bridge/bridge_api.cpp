#include "kube-bridge/bridge_api.hpp"

#include <algorithm>
#include <charconv>

#include "common/admission.hpp"
#include "common/json_value.hpp"
#include "kube-bridge/slurm_workload.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {
namespace {

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

// The segments `pattern` ("workloads/{}/stop") captures from `parts`; nullopt when it does not match.
std::optional<std::vector<std::string>> match(std::string_view pattern, const std::vector<std::string>& parts,
                                              std::size_t first) {
  std::vector<std::string> captures;
  std::size_t i = first;
  while (!pattern.empty()) {
    std::size_t slash = pattern.find('/');
    std::string_view segment = pattern.substr(0, slash);
    pattern = slash == std::string_view::npos ? std::string_view() : pattern.substr(slash + 1);
    if (i >= parts.size()) return std::nullopt;
    if (segment == "{}") captures.push_back(parts[i]);
    else if (segment != parts[i]) return std::nullopt;
    ++i;
  }
  if (i != parts.size()) return std::nullopt;
  return captures;
}

}  // namespace

// Reals with 12 significant digits: an ETTR of 0.9 reads 0.9, not 0.90000000000000002.
ApiResponse json_response(int status, const json_t* body) {
  return {status, json_dump(body, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_REAL_PRECISION(12)), "application/json", {}, ""};
}

ApiResponse error_response(int status, const std::string& message) {
  Json body = json_take(json_object());
  json_set(body.get(), "error", json_str(message));
  return json_response(status, body.get());
}

BridgeApi::BridgeApi(BridgeSettings settings, Authenticator& auth, UserDirectory& users, SlurmCache& slurm,
                     BridgeMetrics& metrics, UserWorkDirs& work_dirs, SlurmTarget::OutputReader read_output)
    : settings_(std::move(settings)), auth_(auth), users_(users), slurm_(slurm), metrics_(metrics),
      work_dirs_(work_dirs), slurm_target_(slurm, users, std::move(read_output)) {}

void BridgeApi::set_kube_target(KubeTarget* kube) {
  kube_ = kube;
  kube_target_ = kube ? std::make_unique<KubeWorkloadTarget>(*kube) : nullptr;
}

// The API under /api/v1. The order matters only for the Allow header of a 405.
const std::vector<BridgeApi::Route>& BridgeApi::routes() {
  static const std::vector<Route> table = {
      {"GET", "workloads", &BridgeApi::list_workloads},
      {"POST", "workloads", &BridgeApi::create_workload},
      {"GET", "workloads/{}", &BridgeApi::get_workload},
      {"DELETE", "workloads/{}", &BridgeApi::delete_workload},
      {"POST", "workloads/{}/stop", &BridgeApi::stop_workload},
      {"GET", "workloads/{}/logs", &BridgeApi::workload_logs},
      {"GET", "workloads/{}/endpoints", &BridgeApi::workload_endpoints},
      {"GET", "workloads/{}/events", &BridgeApi::workload_events},
      {"GET", "workspaces", &BridgeApi::list_workspaces},
      {"GET", "workspaces/{}", &BridgeApi::get_workspace},
      {"GET", "nodes", &BridgeApi::list_nodes},
      {"GET", "nodes/{}/faults", &BridgeApi::node_faults},
      {"GET", "failovers", &BridgeApi::list_failovers},
      {"GET", "ettr-history", &BridgeApi::ettr_history},
      {"GET", "gpu-health", &BridgeApi::gpu_health},
  };
  return table;
}

ApiResponse BridgeApi::handle(const ApiRequest& request) {
  std::vector<std::string> parts = split_path(request.path);
  // Open to everyone: health, metrics, the API's description.
  if (parts.size() == 1 && (parts[0] == "healthz" || parts[0] == "metrics" || parts[0] == "openapi.json")) {
    if (request.method != "GET" && request.method != "HEAD") return method_not_allowed("GET");
    if (parts[0] == "healthz") return {200, "{\"status\":\"ok\"}", "application/json", {}, "-"};
    if (parts[0] == "metrics")
      return {200, metrics_.render() + (services_ ? services_->metrics_text() : ""), "text/plain; version=0.0.4", {}, "-"};
    return {200, settings_.openapi_document, "application/json", {}, "-"};
  }
  if (!parts.empty() && parts[0] == "console") return console(request, parts);
  if (parts.size() < 2 || parts[0] != "api" || parts[1] != "v1") {
    ApiResponse r = error_response(404, "no such resource; the API lives under /api/v1 (see /openapi.json)");
    r.user = "-";
    return r;
  }
  auto asker = requester(request);
  if (auto* refused = std::get_if<ApiResponse>(&asker)) return *refused;
  const Principal& who = std::get<Principal>(asker);
  std::string allow;  // the methods of the routes whose pattern matches
  ApiResponse r = error_response(404, "no such resource; see /openapi.json");
  bool routed = false;
  for (const Route& route : routes()) {
    auto captures = match(route.pattern, parts, 2);
    if (!captures) continue;
    if (route.method != request.method) {
      allow += (allow.empty() ? "" : ", ") + std::string(route.method);
      continue;
    }
    r = (this->*route.handler)(request, who, *captures);
    routed = true;
    break;
  }
  if (!routed && !allow.empty()) r = method_not_allowed(allow);
  r.user = who.user.name;
  return r;
}

ApiResponse BridgeApi::create_workload(const ApiRequest& req, const Principal& who, const Captures&) {
  SpecParse parsed = parse_workload_spec(req.body);
  if (parsed.malformed) return field_errors(400, "the request body is not valid JSON", parsed.errors);
  if (!parsed.spec) return field_errors(422, "invalid workload spec", parsed.errors);
  const WorkloadSpec& spec = *parsed.spec;
  if (spec.target == TargetKind::kubernetes && !kube_)
    return field_errors(422, "invalid workload spec",
                        {{"target", "the kubernetes target is not configured on this bridge (kube_bridge.kubernetes); use target slurm"}});

  // job_submit_safe decides inside slurmctld, for the job's user. libslurm hands back only its
  // error code, not its message: the same pure policy, run here, says why.
  AdmissionRequest admission;
  admission.options = spec.options;
  admission.gpus = static_cast<long long>(spec.kind == WorkloadKind::service ? 1 : spec.nodes) * spec.gpus_per_node;
  AdmissionDecision decision = admit_job(settings_.config, admission, JobUser{who.user.name, who.user.groups});

  if (spec.kind == WorkloadKind::service) return create_service(spec, who, decision);

  if (spec.target == TargetKind::kubernetes) {
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

// A service: its replicas' jobs go through job_submit_safe one by one, as the controller starts
// them; the policy checked here answers at once for what would refuse every one of them.
ApiResponse BridgeApi::create_service(const WorkloadSpec& spec, const Principal& who, const AdmissionDecision& decision) {
  if (!services_)
    return field_errors(422, "invalid workload spec",
                        {{"kind", "services are off on this bridge (kube_bridge.state_dir is \"\"); ask an administrator"}});
  if (!decision.accepted) return error_response(403, decision.message);
  auto work_dir = work_dirs_.prepare(who.user);
  if (!work_dir) return error_response(422, work_dir.error());
  CreateOutcome created = services_->create(spec, who.user, *work_dir);
  if (created.status != 201) return error_response(created.status, created.text);
  metrics_.count_created(false);
  Json body = json_take(json_object());
  json_set(body.get(), "id", json_str(created.text));
  json_set(body.get(), "name", json_str(spec.name));
  json_set(body.get(), "target", json_string("slurm"));
  json_set(body.get(), "kind", json_string("service"));
  json_set(body.get(), "phase", json_string("Pending"));
  if (!decision.message.empty()) json_set(body.get(), "notice", json_str(decision.message));
  ApiResponse r = json_response(201, body.get());
  r.headers.emplace_back("Location", "/api/v1/workloads/" + created.text);
  return r;
}

ApiResponse BridgeApi::workload_endpoints(const ApiRequest&, const Principal& who, const Captures& id) {
  auto found = find_workload(id[0], who);
  if (auto* answer = std::get_if<ApiResponse>(&found)) return *answer;
  auto endpoints = services_ && services_->owns(id[0]) ? services_->endpoints(id[0]) : std::nullopt;
  if (!endpoints) return error_response(404, "workload " + id[0] + " is not a service: only services have endpoints");
  return {200, *endpoints, "application/json", {}, ""};
}

ApiResponse BridgeApi::list_workloads(const ApiRequest& req, const Principal& who, const Captures&) {
  std::string workspace, target;
  std::optional<WorkloadPhase> state;
  long long limit = 100, offset = 0;
  std::vector<FieldError> errors;
  for (const auto& [k, v] : req.query) {
    if (k == "workspace") {
      workspace = v;
    } else if (k == "state") {
      state = parse_workload_phase(v);
      if (!state) errors.push_back({"query.state", "expects Pending, Running, Stopped, Succeeded or Failed"});
    } else if (k == "target") {
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
  // Slurm's workloads first, then Kubernetes': each list is shared, only pointers are collected.
  std::vector<WorkloadList> lists;
  if (target != "kubernetes") {
    auto listed = slurm_target_.list();
    if (!listed) return error_response(503, listed.error());
    lists.push_back(*listed);
    if (services_)
      if (auto services = services_->list()) lists.push_back(*services);
  }
  if (kube_target_ && target != "slurm") {
    auto listed = kube_target_->list();
    if (!listed) return error_response(503, listed.error());
    lists.push_back(*listed);
  }
  std::vector<const ListedWorkload*> selected;
  for (const auto& list : lists) {
    for (const auto& w : *list) {
      if (!(who.admin || w.uid == who.user.uid)) continue;
      if (state && w.phase != *state) continue;
      if (!workspace.empty() && w.workspace != workspace) continue;
      selected.push_back(&w);
    }
  }
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

std::variant<BridgeApi::Found, ApiResponse> BridgeApi::find_workload(const std::string& id, const Principal& who) {
  // The same answer for a malformed id, another user's workload and a missing one.
  ApiResponse not_found =
      error_response(404, "no workload '" + id.substr(0, 64) + "' visible to you; list yours with GET /api/v1/workloads");
  WorkloadTarget* target = nullptr;
  if (slurm_target_.owns(id)) target = &slurm_target_;
  else if (services_ && services_->owns(id)) target = services_;
  else if (kube_target_ && kube_target_->owns(id)) target = kube_target_.get();
  if (!target) return not_found;
  auto found = target->find(id);
  if (!found) return error_response(503, found.error());
  if (!*found || !(who.admin || (*found)->uid == who.user.uid)) return not_found;
  return Found{target, std::move(**found)};
}

ApiResponse BridgeApi::get_workload(const ApiRequest&, const Principal& who, const Captures& id) {
  auto found = find_workload(id[0], who);
  if (auto* answer = std::get_if<ApiResponse>(&found)) return *answer;
  return {200, std::get<Found>(found).workload.json, "application/json", {}, ""};
}

ApiResponse BridgeApi::workload_events(const ApiRequest&, const Principal& who, const Captures& id) {
  auto found = find_workload(id[0], who);
  if (auto* answer = std::get_if<ApiResponse>(&found)) return *answer;
  Found& f = std::get<Found>(found);
  auto events = f.target->events(f.workload);
  if (!events) return error_response(503, events.error());
  Json body = json_take(json_object());
  json_set(body.get(), "id", json_str(f.workload.id));
  json_set(body.get(), "items", events->items.release());
  if (!events->sources.empty()) json_set(body.get(), "sources", json_str(events->sources));
  return json_response(200, body.get());
}

ApiResponse BridgeApi::stop_workload(const ApiRequest&, const Principal& who, const Captures& id) {
  return stop_or_delete(who, id[0], false);
}

ApiResponse BridgeApi::delete_workload(const ApiRequest&, const Principal& who, const Captures& id) {
  return stop_or_delete(who, id[0], true);
}

ApiResponse BridgeApi::stop_or_delete(const Principal& who, const std::string& id, bool remove) {
  auto found = find_workload(id, who);
  if (auto* answer = std::get_if<ApiResponse>(&found)) return *answer;
  Found& f = std::get<Found>(found);
  if (auto refused = f.target->refuses_changes()) return error_response(503, *refused);
  auto phase = f.target->stop(f.workload, remove);
  if (!phase) return error_response(502, phase.error());
  Json body = json_take(json_object());
  json_set(body.get(), "id", json_str(f.workload.id));
  json_set(body.get(), "phase", json_str(*phase));
  if (remove) json_set(body.get(), "deleted", json_true());
  return json_response(remove ? 200 : 202, body.get());
}

ApiResponse BridgeApi::workload_logs(const ApiRequest& req, const Principal& who, const Captures& id) {
  LogRequest request;
  for (const auto& [k, v] : req.query) {
    if (k == "attempt") {
      auto n = query_int(v, 1, 1000);
      if (!n) return field_errors(422, "invalid query", {{"query.attempt", "expects an integer 1..1000"}});
      request.attempt = static_cast<int>(*n);
    } else if (k == "replica") {
      auto n = query_int(v, 0, kMaxReplicas - 1);
      if (!n) return field_errors(422, "invalid query", {{"query.replica", "expects a replica index 0.." + std::to_string(kMaxReplicas - 1)}});
      request.replica = static_cast<int>(*n);
    } else if (k == "tailBytes") {
      auto n = query_int(v, 1, kMaxLogBytes);
      if (!n) return field_errors(422, "invalid query", {{"query.tailBytes", "expects an integer 1..16777216"}});
      request.tail_bytes = static_cast<std::size_t>(*n);
    } else {
      return field_errors(422, "invalid query", {{"query." + k.substr(0, 80), "unknown parameter; expected attempt, replica or tailBytes"}});
    }
  }
  auto found = find_workload(id[0], who);
  if (auto* answer = std::get_if<ApiResponse>(&found)) return *answer;
  Found& f = std::get<Found>(found);
  auto log = f.target->logs(f.workload, request);
  if (!log) return error_response(404, log.error());
  ApiResponse r{200, std::move(log->text), "text/plain; charset=utf-8", {}, ""};
  r.headers.emplace_back("X-Safe-Log-Attempts", std::to_string(log->attempts));
  return r;
}

}  // namespace safe::bridge
