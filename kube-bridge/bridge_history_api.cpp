// safed's history through the REST API (for the web console's failovers and cluster pages): the
// cluster's failovers, each user seeing their own jobs' (safed answers the bridge, an admin of
// its, with every job's), a node's faults, which belong to no user, and ETTR per workspace over
// time, of the workspaces the user belongs to, and the nodes' GPU grids, which belong to no user.
// All need a controller (kube_bridge.controller_url
// or controller.ha); without an answer from it they are 503.
#include <charconv>
#include <functional>
#include <variant>

#include "common/admission.hpp"
#include "common/json_value.hpp"
#include "kube-bridge/bridge_api.hpp"
#include "kube-bridge/slurm_workload.hpp"
#include "kube-bridge/workload_view.hpp"

namespace safe::bridge {
namespace {

// ?since=SECONDS (since the epoch), and nothing else.
std::optional<long long> since_of(const ApiRequest& req, std::string& error) {
  long long since = 0;
  for (const auto& [k, v] : req.query) {
    if (k != "since") {
      error = "unknown parameter '" + k.substr(0, 80) + "'; expected since (seconds since the epoch)";
      return std::nullopt;
    }
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), since);
    if (ec != std::errc() || end != v.data() + v.size() || since < 0) {
      error = "since expects seconds since the epoch (a non-negative integer)";
      return std::nullopt;
    }
  }
  return since;
}

ApiResponse no_controller() {
  return error_response(503, "safe: safed's history is not available (no controller configured, "
                             "kube_bridge.controller_url, or it does not answer); retry shortly");
}

// safed's answer (a document with an "items" list) with each item made the API's by `one`
// (nullptr: not this caller's to see), as {"items": [...]} after `fields`; or the error to answer:
// 503 without an answer, 502 for something else.
ApiResponse each_item(const std::optional<std::string>& document, const char* what,
                      const std::function<json_t*(const json_t*)>& one, Json fields = json_take(json_object())) {
  if (!document) return no_controller();
  Json doc = json_take(json_loadb(document->data(), document->size(), 0, nullptr));
  const json_t* items = json_object_get(doc.get(), "items");
  if (!json_is_array(items))
    return error_response(502, std::string("safe: safed's answer is not ") + what + "; check its version");
  json_t* out = json_array();
  std::size_t i;
  const json_t* item;
  json_array_foreach(items, i, item)
    if (json_t* o = one(item)) json_array_append_new(out, o);
  json_set(fields.get(), "items", out);
  return json_response(200, fields.get());
}

json_t* text_or_null(const json_t* object, const char* key) {
  std::string v = json_string_or(object, key);
  return v.empty() ? json_null() : json_str(v);
}

json_t* time_or_null(const json_t* seconds) {
  long long t = json_integer_value(seconds);
  return t > 0 ? time_json(static_cast<std::time_t>(t)) : json_null();
}

}  // namespace

ApiResponse BridgeApi::list_failovers(const ApiRequest& req, const Principal& who, const Captures&) {
  std::string error;
  auto since = since_of(req, error);
  if (!since) return error_response(422, error);
  return each_item(history_ ? history_->failovers(*since) : std::nullopt, "a failover list", [&](const json_t* f) -> json_t* {
    json_int_t uid = json_integer_value(json_object_get(f, "user_id"));
    if (!who.admin && uid != static_cast<json_int_t>(who.user.uid)) return nullptr;
    json_t* o = json_object();
    auto job_id = static_cast<std::uint32_t>(json_integer_value(json_object_get(f, "job_id")));
    json_set(o, "workloadId", json_str(slurm_workload_id(job_id)));
    json_set(o, "slurmJobId", json_integer(job_id));
    json_set(o, "attempt", json_integer(json_integer_value(json_object_get(f, "attempt"))));
    json_set(o, "class", json_str(json_string_or(f, "class")));
    json_set(o, "evidence", json_str(json_string_or(f, "evidence")));
    json_set(o, "badNodes", json_str(json_string_or(f, "bad_nodes")));
    json_set(o, "phase", json_str(json_string_or(f, "phase")));
    json_set(o, "workspace", text_or_null(f, "workspace"));
    json_set(o, "gpus", json_integer(json_integer_value(json_object_get(f, "gpus"))));
    json_set(o, "usesRetry", json_boolean(json_is_true(json_object_get(f, "uses_retry"))));
    json_set(o, "faultTime", time_or_null(json_object_get(f, "fault_time")));
    json_set(o, "runningAgainTime", time_or_null(json_object_get(f, "running_again_time")));
    const json_t* mttr = json_object_get(f, "mttr_s");
    json_set(o, "mttrSeconds", json_is_integer(mttr) ? json_integer(json_integer_value(mttr)) : json_null());
    return o;
  });
}

ApiResponse BridgeApi::ettr_history(const ApiRequest& req, const Principal& who, const Captures&) {
  long long since = 0, step = 86400;
  for (const auto& [k, v] : req.query) {
    long long n = -1;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    bool number = ec == std::errc() && end == v.data() + v.size() && n >= 0;
    if (k == "since" && number) since = n;
    else if (k == "step" && number && n >= 60) step = n;
    else
      return error_response(422, "ettr-history takes since (seconds since the epoch) and step (seconds, at least 60; "
                                 "86400 when left out)");
  }
  JobUser user{who.user.name, who.user.groups};
  auto visible = [&](const std::string& workspace) {
    if (who.admin) return true;
    for (const auto& w : settings_.config.workspaces)
      if (w.name == workspace) return is_member(w, user);
    return false;  // no workspace, or one no longer configured: an admin's to see
  };
  Json fields = json_take(json_object());
  json_set(fields.get(), "stepSeconds", json_integer(step));
  auto one = [&](const json_t* p) -> json_t* {
    std::string workspace = json_string_or(p, "workspace");
    if (!visible(workspace)) return nullptr;
    json_t* o = json_object();
    json_set(o, "workspace", workspace.empty() ? json_null() : json_str(workspace));
    json_set(o, "start", time_json(static_cast<std::time_t>(json_integer_value(json_object_get(p, "start")))));
    json_set(o, "jobs", json_integer(json_integer_value(json_object_get(p, "jobs"))));
    json_set(o, "ettr", json_real(json_number_value(json_object_get(p, "ettr"))));
    json_set(o, "productiveSeconds", json_real(json_number_value(json_object_get(p, "productive_s"))));
    json_set(o, "wallSeconds", json_real(json_number_value(json_object_get(p, "wall_s"))));
    return o;
  };
  return each_item(history_ ? history_->ettr_history(since, step) : std::nullopt, "an ETTR history", one,
                   std::move(fields));
}

ApiResponse BridgeApi::gpu_health(const ApiRequest& req, const Principal&, const Captures&) {
  if (!req.query.empty()) return error_response(422, "gpu-health takes no parameters");
  return each_item(history_ ? history_->node_gpus() : std::nullopt, "a list of GPU grids", [](const json_t* n) {
    json_t* o = json_object();
    json_set(o, "node", json_str(json_string_or(n, "node")));
    json_set(o, "checkedAt", time_or_null(json_object_get(n, "time")));
    json_set(o, "receivedAt", time_or_null(json_object_get(n, "received")));
    json_set(o, "backend", json_str(json_string_or(n, "backend")));
    json_t* checks = json_array();
    std::size_t k;
    const json_t* c;
    json_array_foreach(json_object_get(n, "checks"), k, c)
      if (json_is_string(c)) json_array_append_new(checks, json_str(json_string_value(c)));
    json_set(o, "checks", checks);
    json_t* gpus = json_array();
    const json_t* g;
    json_array_foreach(json_object_get(n, "gpus"), k, g) {
      json_t* gpu = json_object();
      json_set(gpu, "index", json_integer(json_integer_value(json_object_get(g, "index"))));
      json_set(gpu, "busId", json_str(json_string_or(g, "bus_id")));
      json_t* failed = json_array();
      std::size_t m;
      const json_t* f;
      json_array_foreach(json_object_get(g, "failed"), m, f) {
        json_t* one = json_object();
        json_set(one, "check", json_str(json_string_or(f, "check")));
        json_set(one, "detail", json_str(json_string_or(f, "detail")));
        json_array_append_new(failed, one);
      }
      json_set(gpu, "failed", failed);
      json_array_append_new(gpus, gpu);
    }
    json_set(o, "gpus", gpus);
    json_set(o, "gpuCount", text_or_null(n, "gpu_count"));
    json_set(o, "unknown", text_or_null(n, "unknown"));
    return o;
  });
}

ApiResponse BridgeApi::node_faults(const ApiRequest& req, const Principal&, const Captures& name) {
  std::string error;
  auto since = since_of(req, error);
  if (!since) return error_response(422, error);
  auto nodes = slurm_.nodes();
  if (!nodes) return error_response(503, "safe: cannot read nodes from Slurm: " + nodes.error() + "; retry shortly");
  bool known = false;
  for (const auto& n : *nodes) known = known || n.name == name[0];
  if (!known) return error_response(404, "no Slurm node named '" + name[0].substr(0, 255) + "'; see GET /api/v1/nodes");
  return each_item(history_ ? history_->node_faults(name[0], *since) : std::nullopt, "a fault list", [](const json_t* f) {
    json_t* o = json_object();
    json_set(o, "node", json_str(json_string_or(f, "node")));
    json_set(o, "time", time_or_null(json_object_get(f, "time")));
    json_set(o, "kind", json_str(json_string_or(f, "kind")));
    json_set(o, "detail", json_str(json_string_or(f, "detail")));
    return o;
  });
}

}  // namespace safe::bridge
