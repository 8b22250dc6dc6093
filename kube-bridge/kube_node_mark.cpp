// SaFE's unhealthy mark on a Kubernetes node: the label and NoSchedule taint
// safe-for-slurm.io/unhealthy=<reason>, which every SaFE Job's node affinity avoids. Set by the
// bridge on failover and by the node health agent (safe-kube-node, or safe-healthcheck --kube
// after the merge with the health branch) for its own node; cleared when the node heals.
#include "kube-bridge/kube_node_mark.hpp"

#include "common/json_value.hpp"
#include "kube-bridge/kube_manifests.hpp"

namespace safe::bridge {
namespace {

std::string jstr(const json_t* j, const char* key) {
  const json_t* v = json_object_get(j, key);
  return json_is_string(v) ? json_string_value(v) : "";
}

std::string why(const KubeResponse& r) {
  if (r.status == 0) return r.error;
  Json j = json_take(json_loadb(r.body.data(), r.body.size(), 0, nullptr));
  std::string m = jstr(j.get(), "message");
  return "HTTP " + std::to_string(r.status) + (m.empty() ? "" : ": " + m);
}

}  // namespace

Status mark_node_unhealthy(KubeClient& client, const std::string& node, const std::string& reason, bool clear) {
  std::string path = "/api/v1/nodes/" + url_escape(node);
  KubeResponse got = client.request("GET", path);
  if (got.status != 200) return Error{"cannot read node " + node + ": " + why(got)};
  Json n = json_take(json_loadb(got.body.data(), got.body.size(), 0, nullptr));
  // A merge patch replaces the taints list whole: keep the others, add or drop SaFE's.
  json_t* taints = json_array();
  json_t* old = json_object_get(json_object_get(n.get(), "spec"), "taints");
  for (std::size_t i = 0; i < json_array_size(old); ++i) {
    json_t* t = json_array_get(old, i);
    if (jstr(t, "key") != kUnhealthyKey) json_array_append(taints, t);
  }
  json_t* labels = json_object();
  if (clear) {
    json_set(labels, std::string(kUnhealthyKey).c_str(), json_null());
  } else {
    json_t* taint = json_object();
    json_set(taint, "key", json_str(kUnhealthyKey));
    json_set(taint, "value", json_str(reason));
    json_set(taint, "effect", json_string("NoSchedule"));
    json_array_append_new(taints, taint);
    json_set(labels, std::string(kUnhealthyKey).c_str(), json_str(reason));
  }
  Json patch = json_take(json_object());
  json_t* meta = json_object();
  json_set(meta, "labels", labels);
  json_set(patch.get(), "metadata", meta);
  json_t* spec = json_object();
  json_set(spec, "taints", taints);
  json_set(patch.get(), "spec", spec);
  KubeResponse r = client.request("PATCH", path, json_text(patch.get()), "application/merge-patch+json");
  if (r.status != 200) return Error{"cannot mark node " + node + ": " + why(r)};
  return ok_status();
}

}  // namespace safe::bridge
