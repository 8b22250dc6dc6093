// Workloads on Slurm: a workload is a Slurm job whose Comment carries the bridge's record
// (slurm_workload.hpp), so the bridge keeps no state of its own for them. Jobs are read through
// the bridge's SlurmCache; the views of one job snapshot are rendered once and shared by every
// list request until the snapshot changes. A deleted workload is hidden until Slurm forgets its
// job (MinJobAge).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <unordered_map>

#include "common/user_directory.hpp"
#include "kube-bridge/controller_history.hpp"
#include "kube-bridge/slurm_cache.hpp"
#include "kube-bridge/workload_target.hpp"

namespace safe::bridge {

class SlurmTarget : public WorkloadTarget {
 public:
  // Reads the last bytes of a job's output file as its user's (common/user_file.hpp: no links,
  // owner checked); tests pass their own.
  using OutputReader = std::function<Result<std::string>(const std::string& path, uid_t owner, std::size_t max_bytes)>;
  SlurmTarget(SlurmCache& slurm, UserDirectory& users, OutputReader read_output);
  // safed's history joins the events when a controller is deployed.
  void set_controller_history(ControllerHistory* history) { history_ = history; }

  bool owns(const std::string& id) const override;
  Result<WorkloadList> list() override;
  Result<std::optional<ListedWorkload>> find(const std::string& id) override;
  Result<EventList> events(const ListedWorkload& w) override;
  Result<std::string> stop(const ListedWorkload& w, bool remove) override;
  Result<WorkloadLog> logs(const ListedWorkload& w, const LogRequest& request) override;

 private:
  struct Index {
    JobSnapshot snapshot;
    std::vector<ListedWorkload> workloads;
    std::unordered_map<std::uint32_t, std::size_t> by_job;  // job id -> position in workloads
  };
  Result<std::shared_ptr<const Index>> index();
  // The job of a workload in the current snapshot (nullptr: gone).
  Result<const SlurmJob*> job_of(const ListedWorkload& w, JobSnapshot& keep);
  bool deleted(std::uint32_t job_id);

  SlurmCache& slurm_;
  UserDirectory& users_;
  OutputReader read_output_;
  ControllerHistory* history_ = nullptr;
  std::mutex index_mutex_;
  std::shared_ptr<const Index> index_;
  std::mutex deleted_mutex_;
  std::set<std::uint32_t> deleted_;
};

}  // namespace safe::bridge
