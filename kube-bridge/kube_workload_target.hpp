// Workloads on Kubernetes as the REST API sees them: the WorkloadTarget over KubeTarget.
#pragma once

#include "kube-bridge/kube_target.hpp"
#include "kube-bridge/workload_target.hpp"

namespace safe::bridge {

class KubeWorkloadTarget : public WorkloadTarget {
 public:
  explicit KubeWorkloadTarget(KubeTarget& kube) : kube_(kube) {}
  bool owns(const std::string& id) const override { return id.starts_with("kube-"); }
  Result<WorkloadList> list() override;
  Result<std::optional<ListedWorkload>> find(const std::string& id) override;
  Result<EventList> events(const ListedWorkload& w) override;
  std::optional<std::string> refuses_changes() override;
  Result<std::string> stop(const ListedWorkload& w, bool remove) override;
  Result<WorkloadLog> logs(const ListedWorkload& w, const LogRequest& request) override;

 private:
  KubeTarget& kube_;
};

}  // namespace safe::bridge
