// The cluster's side of the REST API: workspaces (quota, GPUs in use, jobs the quota holds,
// members, and safed's ETTR and time lost) and nodes (Slurm's and, when configured, Kubernetes'),
// as each caller may see them.
#include <map>
#include <optional>

#include "common/admission.hpp"
#include "common/job_metadata.hpp"
#include "common/json_value.hpp"
#include "kube-bridge/bridge_api.hpp"

namespace safe::bridge {
namespace {

// Pending SaFE jobs that Slurm holds for licenses, by workspace: a workspace's quota is its
// license (safe_ws_NAME), so these wait for its GPUs to come free.
std::map<std::string, long long> held_by_quota(const std::vector<SlurmJob>& jobs) {
  std::map<std::string, long long> held;
  for (const auto& j : jobs) {
    if (j.state != SlurmJobState::pending || j.reason != "Licenses") continue;
    if (auto m = parse_job_metadata(j.admin_comment); m && !m->settings.workspace.empty()) ++held[m->settings.workspace];
  }
  return held;
}

// safed's figures for a workspace (GET /api/v1/workspaces on it): ETTR (none before any of its
// jobs ran) and the time its jobs lost to faults.
struct ControllerFigures {
  std::optional<double> ettr, time_lost_s;
};

std::optional<double> number_or_none(const json_t* v) {
  return json_is_number(v) ? std::optional<double>(json_number_value(v)) : std::nullopt;
}

// By workspace name; empty without an answer.
std::map<std::string, ControllerFigures> controller_figures(const std::optional<std::string>& document) {
  std::map<std::string, ControllerFigures> figures;
  if (!document) return figures;
  Json doc = json_take(json_loadb(document->data(), document->size(), 0, nullptr));
  std::size_t i;
  const json_t* w;
  json_array_foreach(json_object_get(doc.get(), "items"), i, w) {
    const json_t* name = json_object_get(w, "name");
    if (json_is_string(name))
      figures[json_string_value(name)] = {number_or_none(json_object_get(w, "ettr")),
                                          number_or_none(json_object_get(w, "time_lost_s"))};
  }
  return figures;
}

json_t* number_json(std::optional<double> v) { return v ? json_real(*v) : json_null(); }

}  // namespace

ApiResponse BridgeApi::list_workspaces(const ApiRequest&, const Principal& who, const Captures&) {
  return workspaces(who, "");
}

ApiResponse BridgeApi::get_workspace(const ApiRequest&, const Principal& who, const Captures& name) {
  return workspaces(who, name[0]);
}

ApiResponse BridgeApi::workspaces(const Principal& who, const std::string& only) {
  auto licenses = slurm_.licenses();
  auto jobs = slurm_.jobs();
  std::map<std::string, long long> held = jobs ? held_by_quota(**jobs) : std::map<std::string, long long>{};
  auto figures = controller_figures(history_ ? history_->workspaces() : std::nullopt);
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
    json_set(j, "pendingHeldByQuota", !jobs ? json_null() : json_integer(held.count(w.name) ? held[w.name] : 0));
    // safed's: null without a controller's answer, and ETTR before any of the workspace's jobs ran.
    ControllerFigures f = figures.count(w.name) ? figures[w.name] : ControllerFigures{};
    json_set(j, "ettr", number_json(f.ettr));
    json_set(j, "timeLostSeconds", number_json(f.time_lost_s));
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

ApiResponse BridgeApi::list_nodes(const ApiRequest&, const Principal&, const Captures&) {
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
    bool unhealthy = n.drain || n.state_down;  // drained or draining, DOWN, FAIL
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

}  // namespace safe::bridge
