// A service workload as the bridge keeps it (kind service, Slurm target): the spec, who owns it,
// how many replicas it wants now, and each replica's job and restart history. One JSON file per
// service in the bridge's state directory (service_store.hpp), so a restarted bridge adopts the
// replicas' jobs instead of starting them again.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <ctime>
#include <deque>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {

struct ServiceEvent {
  std::time_t time = 0;
  std::string type;  // ReplicaStarted, ReplicaReady, ReplicaFailed, CrashLooping, NodeUnhealthy, ...
  int replica = -1;  // -1: the service as a whole
  std::string message;
  bool operator==(const ServiceEvent&) const = default;
};

struct ReplicaState {
  int index = 0;
  std::uint32_t job_id = 0;  // the replica's job; 0: none (waiting to start)
  int port = 0;
  // A job started while job_id's node is unhealthy; it takes over once it is ready, and only then
  // is the old one cancelled (the replica keeps serving meanwhile).
  std::uint32_t replacement_job = 0;
  int replacement_port = 0;
  int replacement_failures = 0;  // replacements in a row that ended before taking over
  int failures = 0;           // consecutive failures of its own (a node's fault does not count)
  std::time_t not_before = 0;  // back-off: no new job before this
  bool crash_looping = false;
  int restarts = 0;
  std::time_t ready_since = 0;  // 0: not ready
  std::string last_failure;
  std::vector<std::string> avoid_nodes;  // the node it was last lost on (a fault), left out of its next job
  std::uint32_t unhealthy_job = 0;       // the job it is moving away from (bad node, time limit)
  int start_failures = 0;                // Slurm refused its last starts: the next asks for any node
  std::uint32_t last_job = 0;            // its previous job (its output, while it waits)
  std::time_t started_at = 0;            // when its newest job (or replacement) was submitted
  bool spread = false;                   // its job was submitted kept off its siblings' nodes
  bool spread_given_up = false;          // such a job waited too long: the next may go anywhere
  bool operator==(const ReplicaState&) const = default;
};

struct ServiceRecord {
  WorkloadSpec spec;
  std::string user;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string work_dir;
  std::time_t created = 0;
  int desired = 1;
  bool stopped = false;
  bool deleted = false;  // deleted: kept (stopped) only until none of its jobs runs
  std::time_t last_scaled = 0;
  std::time_t lower_demand_since = 0;  // scaling: since when fewer replicas would do; 0: not
  int lower_demand_peak = 0;           // the most replicas wanted since then
  std::vector<ReplicaState> replicas;
  std::set<std::uint32_t> cancelled;  // jobs the bridge cancelled: their end is no failure
  std::deque<ServiceEvent> events;    // the newest kMaxServiceEvents
  bool operator==(const ServiceRecord&) const = default;
};

constexpr std::size_t kMaxServiceEvents = 200;

void add_event(ServiceRecord& record, ServiceEvent event);

std::string service_record_json(const ServiceRecord& record);
// nullopt (with why) when the text is not a record this bridge wrote.
Result<ServiceRecord> parse_service_record(std::string_view text);

// "svc-NAME" <-> NAME.
std::string service_workload_id(const std::string& name);
std::optional<std::string> parse_service_workload_id(std::string_view id);

}  // namespace safe::bridge
