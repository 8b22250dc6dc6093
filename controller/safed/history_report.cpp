#include "controller/safed/history_report.hpp"

#include <algorithm>

#include "common/json_utf8.hpp"
#include "common/json_value.hpp"

namespace safe {

json_t* failover_json(const FailoverRecord& f) {
  json_t* o = json_object();
  json_set(o, "attempt", json_integer(f.attempt + 1));
  json_set(o, "class", json_utf8(f.failure_class));
  json_set(o, "evidence", json_utf8(f.evidence));
  json_set(o, "bad_nodes", json_utf8(f.bad_nodes));
  json_set(o, "phase", json_utf8(to_string(f.phase)));
  json_set(o, "fault_time", json_integer(f.fault_time));
  json_set(o, "signal_time", json_integer(f.signal_time));
  json_set(o, "requeue_time", json_integer(f.requeue_time));
  json_set(o, "running_again_time", json_integer(f.running_again_time));
  bool again = f.running_again_time > 0 && f.running_again_time >= f.fault_time;
  json_set(o, "mttr_s", again ? json_integer(f.running_again_time - f.fault_time) : json_null());
  return o;
}

std::string render_failovers_json(StateStore& store, long long since, std::optional<std::uint32_t> user) {
  std::vector<FailoverRecord> failovers = store.all_failovers();
  std::stable_sort(failovers.begin(), failovers.end(),
                   [](const FailoverRecord& a, const FailoverRecord& b) { return a.fault_time < b.fault_time; });
  Json root = json_take(json_object());
  json_t* items = json_array();
  for (const auto& f : failovers) {
    if (f.fault_time < since) continue;
    std::optional<JobRecord> job = store.job(f.key());
    if (!job || (user && job->user_id != *user)) continue;
    json_t* o = failover_json(f);
    json_set(o, "job_id", json_integer(f.job_id));
    json_set(o, "submitted", json_integer(f.submitted));
    json_set(o, "user_id", json_integer(job->user_id));
    json_set(o, "workspace", json_utf8(f.workspace));
    json_set(o, "gpus", json_integer(f.gpus));
    json_set(o, "uses_retry", json_boolean(f.uses_retry));
    json_array_append_new(items, o);
  }
  json_set(root.get(), "items", items);
  return json_document(root.get(), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

std::string render_node_faults_json(StateStore& store, const std::string& node, long long since, int limit) {
  std::vector<NodeFaultRecord> faults;
  if (!node.empty()) {
    faults = store.node_faults(node, since);
  } else {
    for (auto& f : store.recent_node_faults(limit))
      if (f.time >= since) faults.push_back(std::move(f));
    std::reverse(faults.begin(), faults.end());
  }
  Json root = json_take(json_object());
  json_t* items = json_array();
  for (const auto& f : faults) {
    json_t* o = json_object();
    json_set(o, "node", json_utf8(f.node));
    json_set(o, "time", json_integer(f.time));
    json_set(o, "kind", json_utf8(f.kind));
    json_set(o, "detail", json_utf8(f.detail));
    json_array_append_new(items, o);
  }
  json_set(root.get(), "items", items);
  return json_document(root.get(), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

}  // namespace safe
