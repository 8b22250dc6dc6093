// Where workloads run: the Slurm cluster (slurm_target.cpp) or a Kubernetes namespace
// (kube_workload_target.cpp). The REST API routes a request about a workload to the target its
// id names and answers in the same terms for both: the same view (workload_view.hpp), the same
// events, the same stop, the same log parameters. A target's errors say what failed; the API
// answers 503 when a target cannot be read or takes no changes here (a standby bridge), 502 when
// it could not stop a workload, 404 for a log it cannot show.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "kube-bridge/workload_view.hpp"

namespace safe::bridge {

inline constexpr std::size_t kDefaultLogBytes = 1 << 20;
inline constexpr std::size_t kMaxLogBytes = 16 << 20;

// A workload in a list: who may see it, what the filters look at, and its view rendered.
struct ListedWorkload {
  std::string id;
  uid_t uid = 0;
  WorkloadPhase phase = WorkloadPhase::pending;
  std::string workspace;
  std::string json;
};

// A target's workloads, shared: the Slurm target hands out the same list until its jobs change.
using WorkloadList = std::shared_ptr<const std::vector<ListedWorkload>>;

struct LogRequest {
  int attempt = 0;  // 1, 2, ...: the log holding that attempt; 0: the current attempt's
  std::size_t tail_bytes = kDefaultLogBytes;  // at most this many bytes, from the end
  int replica = -1;  // a service's replica (0, 1, ...); -1: replica 0 (services), none (training)
};

struct EventList {
  Json items;           // a JSON array of events (render_event)
  std::string sources;  // where they came from ("slurm", "slurm,safed"); "": one source, not shown
};

struct WorkloadLog {
  std::string text;
  int attempts = 1;  // how many attempts' output the text holds (on Slurm, every attempt appends to one file)
};

class WorkloadTarget {
 public:
  virtual ~WorkloadTarget() = default;
  // Whether `id` names one of this target's workloads (by its prefix).
  virtual bool owns(const std::string& id) const = 0;
  // Every workload, each rendered once per change of the target's state.
  virtual Result<WorkloadList> list() = 0;
  // The workload `id` names; nullopt when there is none.
  virtual Result<std::optional<ListedWorkload>> find(const std::string& id) = 0;
  virtual Result<EventList> events(const ListedWorkload& w) = 0;
  // Why this target takes no stops or deletes now (a standby bridge: where to send them); nullopt
  // when it does.
  virtual std::optional<std::string> refuses_changes() { return std::nullopt; }
  // Stops the workload (`remove`: deletes it, too); the phase to answer.
  virtual Result<std::string> stop(const ListedWorkload& w, bool remove) = 0;
  // Fails with why there is no log to show; an attempt that has not run is such a failure.
  virtual Result<WorkloadLog> logs(const ListedWorkload& w, const LogRequest& request) = 0;
};

// The last `max_bytes` of `text`.
inline std::string tail_of(std::string text, std::size_t max_bytes) {
  if (text.size() > max_bytes) text.erase(0, text.size() - max_bytes);
  return text;
}

}  // namespace safe::bridge
