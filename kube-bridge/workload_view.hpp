// A workload as the REST API shows it, on either target: one view, filled by each target from
// what it knows (a Slurm job, a Kubernetes workload's record) and rendered by one function, so
// both targets answer in the same fields. Events likewise.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/json_value.hpp"
#include "common/slurm/model.hpp"
#include "kube-bridge/kube_workload_record.hpp"
#include "kube-bridge/slurm_workload.hpp"
#include "kube-bridge/workload_phase.hpp"

namespace safe::bridge {

struct WorkloadView {
  std::string id;      // slurm-N, kube-NAME
  std::string name;
  std::string target;  // slurm, kubernetes
  std::string user;
  uid_t uid = 0;       // not shown: who may see it
  std::string workspace;  // "" for none (shown as null)
  WorkloadPhase phase = WorkloadPhase::pending;
  int attempt = 1;
  std::optional<int> max_retries;
  std::optional<std::string> health;
  std::string checkpoint_dir;  // "" for none (shown as null)
  std::string nodes;
  int node_count = 0;
  std::string excluded_nodes;
  std::time_t submit_time = 0;
  // What only Slurm reports: its state and reason, the exit code and the run's times.
  struct SlurmDetails {
    std::string state, reason;
    std::optional<int> exit_code;  // once ended
    std::time_t start_time = 0, end_time = 0;  // 0: not (yet)
  };
  std::optional<SlurmDetails> slurm;
  std::map<std::string, std::string> labels;
};

WorkloadView slurm_workload_view(const SlurmJob& job, const BridgeRecord& record, const std::string& user);
WorkloadView kube_workload_view(const KubeWorkload& w);
Json render_workload(const WorkloadView& view);

struct WorkloadEvent {
  std::string type;  // Submitted, Requeued, Started, Running, Failover, Attempt, Succeeded, Failed, Stopped, ...
  std::time_t time = 0;  // 0: unknown (shown as null)
  int attempt = 1;
  std::string message;
};
// A workload's history as Slurm alone knows it (safed's classifications join it in the Slurm
// target when the controller is deployed).
std::vector<WorkloadEvent> slurm_events(const SlurmJob& job);
std::vector<WorkloadEvent> kube_events(const KubeWorkload& w);
json_t* render_event(const WorkloadEvent& e);

// RFC 3339 in UTC, or null for 0.
json_t* time_json(std::time_t t);

}  // namespace safe::bridge
