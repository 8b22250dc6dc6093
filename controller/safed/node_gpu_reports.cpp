#include "controller/safed/node_gpu_reports.hpp"

#include <iterator>
#include <utility>

#include "common/json_value.hpp"

namespace safe {

void NodeGpuReports::set_nodes(std::vector<std::string> nodes) {
  std::lock_guard lock(mutex_);
  nodes_ = std::set<std::string>(std::make_move_iterator(nodes.begin()), std::make_move_iterator(nodes.end()));
  std::erase_if(reports_, [this](const auto& kept) { return !nodes_.count(kept.first); });
}

Result<bool> NodeGpuReports::put(const NodeGpuReport& report, long long now) {
  std::lock_guard lock(mutex_);
  if (!nodes_.count(report.node))
    return Error{"safed: Slurm has no node '" + report.node + "' (as of safed's last pass); a node's health checker "
                 "sends its own grid"};
  auto kept = reports_.find(report.node);
  if (kept != reports_.end() && kept->second.report.time > report.time && now - kept->second.received < 300) return false;
  reports_[report.node] = {now, report};
  return true;
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
