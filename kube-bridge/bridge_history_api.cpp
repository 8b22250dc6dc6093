// safed's history through the REST API (for the web console's failovers and cluster pages): the
// cluster's failovers, each user seeing their own jobs' (safed answers the bridge, an admin of
// its, with every job's), and a node's faults, which belong to no user. Both need a controller
// (kube_bridge.controller_url or controller.ha); without an answer from it they are 503.
#include <charconv>
#include <variant>

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

// safed's answer (a document with an "items" list) parsed, or the error to answer: 503 without
// one, 502 for something else.
std::variant<Json, ApiResponse> safed_list(const std::optional<std::string>& document, const char* what) {
  if (!document) return no_controller();
  Json doc = json_take(json_loadb(document->data(), document->size(), 0, nullptr));
  if (!json_is_array(json_object_get(doc.get(), "items")))
    return error_response(502, std::string("safe: safed's answer is not ") + what + "; check its version");
  return doc;
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
  auto list = safed_list(history_ ? history_->failovers(*since) : std::nullopt, "a failover list");
  if (auto* refused = std::get_if<ApiResponse>(&list)) return *refused;
  const json_t* items = json_object_get(std::get<Json>(list).get(), "items");
  Json body = json_take(json_object());
  json_t* out = json_array();
  std::size_t i;
  const json_t* f;
  json_array_foreach(items, i, f) {
    json_int_t uid = json_integer_value(json_object_get(f, "user_id"));
    if (!who.admin && uid != static_cast<json_int_t>(who.user.uid)) continue;
    json_t* o = json_object();
    auto job_id = static_cast<std::uint32_t>(json_integer_value(json_object_get(f, "job_id")));
    json_set(o, "workloadId", json_str(slurm_workload_id(job_id)));
    json_set(o, "slurmJobId", json_integer(job_id));
    json_set(o, "attempt", json_integer(json_integer_value(json_object_get(f, "attempt"))));
    json_set(o, "class", json_str(json_string_or(f, "class")));
    json_set(o, "evidence", json_str(json_string_or(f, "evidence")));
    json_set(o, "badNodes", json_str(json_string_or(f, "bad_nodes")));
    json_set(o, "phase", json_str(json_string_or(f, "phase")));
    json_set(o, "workspace", json_string_or(f, "workspace").empty() ? json_null() : json_str(json_string_or(f, "workspace")));
    json_set(o, "gpus", json_integer(json_integer_value(json_object_get(f, "gpus"))));
    json_set(o, "usesRetry", json_boolean(json_is_true(json_object_get(f, "uses_retry"))));
    json_set(o, "faultTime", time_or_null(json_object_get(f, "fault_time")));
    json_set(o, "runningAgainTime", time_or_null(json_object_get(f, "running_again_time")));
    const json_t* mttr = json_object_get(f, "mttr_s");
    json_set(o, "mttrSeconds", json_is_integer(mttr) ? json_integer(json_integer_value(mttr)) : json_null());
    json_array_append_new(out, o);
  }
  json_set(body.get(), "items", out);
  return json_response(200, body.get());
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
  auto list = safed_list(history_ ? history_->node_faults(name[0], *since) : std::nullopt, "a fault list");
  if (auto* refused = std::get_if<ApiResponse>(&list)) return *refused;
  const json_t* items = json_object_get(std::get<Json>(list).get(), "items");
  Json body = json_take(json_object());
  json_t* out = json_array();
  std::size_t i;
  const json_t* f;
  json_array_foreach(items, i, f) {
    json_t* o = json_object();
    json_set(o, "node", json_str(json_string_or(f, "node")));
    json_set(o, "time", time_or_null(json_object_get(f, "time")));
    json_set(o, "kind", json_str(json_string_or(f, "kind")));
    json_set(o, "detail", json_str(json_string_or(f, "detail")));
    json_array_append_new(out, o);
  }
  json_set(body.get(), "items", out);
  return json_response(200, body.get());
}

}  // namespace safe::bridge
