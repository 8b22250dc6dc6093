// A Kubernetes workload as the bridge tracks it, and its record: the JSON the bridge keeps in the
// `safe-for-slurm.io/record` annotation of the workload's current Job (spec, effective settings,
// owner, attempt, excluded nodes, phase, events, a failover in progress). The API server is
// thereby the bridge's store: a restarted bridge lists SaFE's Jobs and rebuilds its workloads
// from their records (KubeTarget::recover). Pure: text in, text out.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/admission.hpp"
#include "common/result.hpp"
#include "kube-bridge/workload_phase.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {

struct KubeEvent {
  std::string type;  // Submitted, Running, Failover, Succeeded, Failed, Stopped, Warning
  std::time_t time = 0;
  int attempt = 1;
  std::string message;
  bool operator==(const KubeEvent&) const = default;
};

struct KubeWorkload {
  WorkloadSpec spec;
  JobSettings settings;
  std::string user;
  uid_t uid = 0;
  gid_t gid = 0;  // with uid: who the pods run as
  int attempt = 1;
  std::vector<std::string> avoid_nodes;
  WorkloadPhase phase = WorkloadPhase::pending;
  std::string nodes;  // where the current attempt's pods run
  std::time_t submit_time = 0;
  std::vector<KubeEvent> events;
  // A failover in progress: the attempt whose pods are being stopped (they got the checkpoint
  // signal), and when the next attempt starts at the latest (the signal's lead time). 0: none.
  int draining_attempt = 0;
  std::time_t drain_deadline = 0;
};

std::string kube_workload_record(const KubeWorkload& w);
// Fails, saying why, for a record this bridge cannot read.
Result<KubeWorkload> parse_kube_workload_record(std::string_view text);

}  // namespace safe::bridge
