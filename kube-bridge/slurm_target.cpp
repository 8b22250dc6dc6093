#include "kube-bridge/slurm_target.hpp"

#include "common/job_metadata.hpp"
#include "kube-bridge/slurm_workload.hpp"

namespace safe::bridge {
namespace {

std::string cannot_read(const std::string& error) { return "safe: cannot read jobs from Slurm: " + error + "; retry shortly"; }

long long meta_submitted(const SlurmJob& job) {
  auto meta = parse_job_metadata(job.admin_comment);
  return meta ? meta->submitted : 0;
}

}  // namespace

SlurmTarget::SlurmTarget(SlurmCache& slurm, UserDirectory& users, OutputReader read_output)
    : slurm_(slurm), users_(users), read_output_(std::move(read_output)) {}

bool SlurmTarget::owns(const std::string& id) const { return id.starts_with("slurm-"); }

bool SlurmTarget::deleted(std::uint32_t job_id) {
  std::lock_guard lock(deleted_mutex_);
  return deleted_.count(job_id) > 0;
}

Result<std::shared_ptr<const SlurmTarget::Index>> SlurmTarget::index() {
  auto snapshot = slurm_.jobs();
  if (!snapshot) return Error{cannot_read(snapshot.error())};
  {
    std::lock_guard lock(index_mutex_);
    if (index_ && index_->snapshot == *snapshot) return index_;
  }
  auto index = std::make_shared<Index>();
  index->snapshot = *snapshot;
  {
    // A deleted workload Slurm no longer knows needs hiding no more.
    std::set<std::uint32_t> present;
    for (const auto& job : **snapshot) present.insert(job.id);
    std::lock_guard lock(deleted_mutex_);
    for (auto it = deleted_.begin(); it != deleted_.end();) it = present.count(*it) ? std::next(it) : deleted_.erase(it);
  }
  for (const auto& job : **snapshot) {
    auto record = parse_bridge_comment(job.comment);
    if (!record || deleted(job.id)) continue;
    if (!record->service.empty()) continue;  // a service's replica: shown by its service
    auto user = users_.by_uid(job.user_id);
    WorkloadView view = slurm_workload_view(job, *record, user ? user->name : std::to_string(job.user_id));
    index->by_job[job.id] = index->workloads.size();
    index->workloads.push_back({view.id, view.uid, view.phase, view.workspace, json_text(render_workload(view).get())});
  }
  std::lock_guard lock(index_mutex_);
  index_ = index;
  return std::shared_ptr<const Index>(index);
}

Result<WorkloadList> SlurmTarget::list() {
  auto idx = index();
  if (!idx) return Error{idx.error()};
  return WorkloadList(*idx, &(*idx)->workloads);  // shares the index: no copy per request
}

Result<std::optional<ListedWorkload>> SlurmTarget::find(const std::string& id) {
  auto job_id = parse_slurm_workload_id(id);
  if (!job_id || deleted(*job_id)) return std::optional<ListedWorkload>();
  auto idx = index();
  if (!idx) return Error{idx.error()};
  auto it = (*idx)->by_job.find(*job_id);
  if (it == (*idx)->by_job.end()) return std::optional<ListedWorkload>();
  return std::optional<ListedWorkload>((*idx)->workloads[it->second]);
}

Result<const SlurmJob*> SlurmTarget::job_of(const ListedWorkload& w, JobSnapshot& keep) {
  auto snapshot = slurm_.jobs();
  if (!snapshot) return Error{cannot_read(snapshot.error())};
  keep = *snapshot;
  auto job_id = parse_slurm_workload_id(w.id);
  for (const auto& j : *keep)
    if (job_id && j.id == *job_id) return &j;
  return Error{"safe: workload " + w.id + " left Slurm"};
}

Result<EventList> SlurmTarget::events(const ListedWorkload& w) {
  JobSnapshot keep;
  auto job = job_of(w, keep);
  if (!job) return Error{job.error()};
  EventList out{json_take(json_array()), "slurm"};
  for (const auto& e : slurm_events(**job)) json_array_append_new(out.items.get(), render_event(e));
  if (history_)
    if (auto doc = history_->job_history((*job)->id, meta_submitted(**job)))
      if (append_controller_events(*doc, out.items.get())) out.sources = "slurm,safed";
  return out;
}

Result<std::string> SlurmTarget::stop(const ListedWorkload& w, bool remove) {
  JobSnapshot keep;
  auto job = job_of(w, keep);
  if (!job) return Error{job.error()};
  const SlurmJob& j = **job;
  if (!has_ended(j))
    if (Status cancelled = slurm_.cancel(j.id); !cancelled)
      return Error{"safe: Slurm did not cancel job " + std::to_string(j.id) + ": " + cancelled.error()};
  if (remove) {
    {
      std::lock_guard lock(deleted_mutex_);
      deleted_.insert(j.id);
    }
    std::lock_guard lock(index_mutex_);
    index_.reset();  // the next list leaves it out, even from the same snapshot
  }
  return std::string(has_ended(j) ? to_string(workload_phase(j)) : "Stopping");
}

// Slurm appends every attempt of a job to its one output file (a requeue reopens it for append),
// so the log holding attempt N is that file, with every attempt's output.
Result<WorkloadLog> SlurmTarget::logs(const ListedWorkload& w, const LogRequest& request) {
  JobSnapshot keep;
  auto job = job_of(w, keep);
  if (!job) return Error{job.error()};
  const SlurmJob& j = **job;
  int attempts = j.restart_count + 1;
  if (request.attempt > attempts)
    return Error{"attempt " + std::to_string(request.attempt) + " has not run; the workload is at attempt " +
                 std::to_string(attempts)};
  auto user = users_.by_uid(j.user_id);
  std::string path = expand_output_path(j, user ? user->name : std::to_string(j.user_id));
  // Written by the job as its user, read here as root: no links, only a regular file its user owns.
  auto text = read_output_(path, j.user_id, request.tail_bytes);
  if (!text) {
    if (waiting_to_start(j)) return Error{"no output yet: the workload has not started"};
    return Error{"safe: the workload's output is not shown: " + text.error()};
  }
  return WorkloadLog{std::move(*text), attempts};
}

}  // namespace safe::bridge
