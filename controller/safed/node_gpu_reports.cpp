#include "controller/safed/node_gpu_reports.hpp"

#include "common/json_value.hpp"

namespace safe {

Status NodeGpuReports::put(const NodeGpuReport& report, long long now) {
  if (!is_node_(report.node))
    return Error{"safed: Slurm has no node '" + report.node + "'; a node's health checker sends its own grid"};
  std::lock_guard lock(mutex_);
  reports_[report.node] = {now, report};
  return ok_status();
}

std::string NodeGpuReports::render_json() const {
  Json root = json_take(json_object());
  json_t* items = json_array();
  {
    std::lock_guard lock(mutex_);
    for (const auto& [node, kept] : reports_) {
      json_t* o = json_loads(to_json(kept.report).c_str(), 0, nullptr);
      if (!o) continue;
      json_set(o, "received", json_integer(kept.received));
      json_array_append_new(items, o);
    }
  }
  json_set(root.get(), "items", items);
  return json_document(root.get(), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

}  // namespace safe
