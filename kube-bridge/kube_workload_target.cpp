#include "kube-bridge/kube_workload_target.hpp"

namespace safe::bridge {
namespace {

// Rendered per request: Kubernetes workloads are few, and they change often.
ListedWorkload listed(const KubeWorkload& w) {
  WorkloadView view = kube_workload_view(w);
  return {view.id, view.uid, view.phase, view.workspace, json_text(render_workload(view).get())};
}

std::string name_of(const ListedWorkload& w) { return w.id.substr(5); }  // after "kube-"

}  // namespace

Result<WorkloadList> KubeWorkloadTarget::list() {
  auto out = std::make_shared<std::vector<ListedWorkload>>();
  for (const auto& w : kube_.list()) out->push_back(listed(w));
  return WorkloadList(std::move(out));
}

Result<std::optional<ListedWorkload>> KubeWorkloadTarget::find(const std::string& id) {
  if (!owns(id)) return std::optional<ListedWorkload>();
  auto w = kube_.get(id.substr(5));
  if (!w) return std::optional<ListedWorkload>();
  return std::optional<ListedWorkload>(listed(*w));
}

Result<EventList> KubeWorkloadTarget::events(const ListedWorkload& w) {
  auto workload = kube_.get(name_of(w));
  if (!workload) return Error{"safe: workload " + w.id + " was deleted"};
  EventList out{json_take(json_array()), ""};
  for (const auto& e : kube_events(*workload)) json_array_append_new(out.items.get(), render_event(e));
  return out;
}

std::optional<std::string> KubeWorkloadTarget::refuses_changes() {
  if (kube_.acting()) return std::nullopt;
  return kube_.standing_by();
}

Result<std::string> KubeWorkloadTarget::stop(const ListedWorkload& w, bool remove) {
  if (Status stopped = kube_.stop(name_of(w), remove); !stopped) return Error{"safe: " + stopped.error()};
  return std::string(remove ? "Deleted" : "Stopped");
}

// The log holding attempt N is the log of that attempt's pod of completion index 0, while its
// pods exist (a failover deletes the Job of the attempt it replaced, with its pods).
Result<WorkloadLog> KubeWorkloadTarget::logs(const ListedWorkload& w, const LogRequest& request) {
  auto text = kube_.logs(name_of(w), request.attempt);
  if (!text) return Error{"safe: no logs: " + text.error()};
  return WorkloadLog{tail_of(std::move(*text), request.tail_bytes), 1};
}

}  // namespace safe::bridge
