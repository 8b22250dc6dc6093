// What the bridge reads from the Kubernetes API, parsed by pure functions from the API server's
// JSON: an attempt's pods, nodes (Ready, SaFE's mark), an attempt's Job, and SaFE's Jobs with
// their records when the bridge recovers. kube_target.cpp makes the requests; the unit tests feed
// these functions fixtures in the API's own format (tests/fixtures/kube/).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "kube-bridge/kube_attempt.hpp"
#include "kube-bridge/kube_workload_record.hpp"

namespace safe::bridge {

struct KubeNodeState {
  std::string name;
  std::optional<bool> ready;        // the Ready condition's status is True; nullopt: no such condition
  std::optional<std::string> mark;  // SaFE's unhealthy label (or, without one, its taint): the value
};

// One Node object's body.
KubeNodeState parse_kube_node(std::string_view body);
// A NodeList's body.
Result<std::vector<KubeNodeState>> parse_kube_node_list(std::string_view body);

// The pods of a PodList's body; the fields about their nodes are left unset.
Result<std::vector<PodObservation>> parse_pod_list(std::string_view body);
// Fills in what `nodes` (by name) say about each pod's node: a node missing from `nodes` is gone,
// which took its pods with it.
void add_node_states(std::vector<PodObservation>& pods, const std::map<std::string, KubeNodeState>& nodes);

// The attempt's Job from its GET answer (status 200 or 404).
JobObservation parse_job_observation(int status, std::string_view body);
// Whether a Job's body says spec.suspend is true.
bool job_is_suspended(std::string_view body);
// Whether a Job's body is SaFE's Job of that workload's attempt (its labels say so).
bool job_is_attempt(std::string_view body, const std::string& workload, int attempt);

// The pod whose log stands for an attempt in a PodList: completion index 0, else the first one.
std::string log_pod(std::string_view pod_list);
// The pods of a PodList that run and are not being deleted.
std::vector<std::string> running_pods(std::string_view pod_list);

// One line of a watch stream.
struct KubeWatchEvent {
  std::string type;              // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
  std::string resource_version;  // the object's: the watch resumes from the newest seen
  bool expired = false;          // ERROR 410: that version was compacted away; list again
  std::string workload;          // the object's SaFE workload label
};
KubeWatchEvent parse_watch_event(std::string_view line);

// A list's metadata.resourceVersion, from which a watch starts.
std::string list_resource_version(std::string_view body);

// SaFE's Jobs in a JobList: each workload's attempts that have a Job, and the workload as the
// record on the Job holding it says; Jobs without a usable record are named in `unusable`.
struct RecoveredWorkloads {
  std::map<std::string, std::vector<int>> attempts;
  std::map<std::string, KubeWorkload> workloads;
  std::vector<std::string> unusable;  // "Job NAME: why"
};
Result<RecoveredWorkloads> parse_recovered_workloads(std::string_view job_list);

// The message of a Kubernetes Status body ("" when there is none).
std::string kube_status_message(std::string_view body);

}  // namespace safe::bridge
