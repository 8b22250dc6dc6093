#include "common/submission.hpp"

#include <algorithm>
#include <string_view>

#include "common/job_metadata.hpp"
#include "common/spare_reservation.hpp"

namespace safe {

std::vector<std::string> settings_spank_env(const JobSettings& s) {
  SafeOptions effective;
  if (!s.workspace.empty()) effective.workspace = s.workspace;
  effective.retries = s.retries;
  if (!s.ckpt_dir.empty()) effective.ckpt_dir = s.ckpt_dir;
  effective.ckpt_signal = s.ckpt_signal;
  effective.health = s.health;
  effective.hang_timeout = s.hang_timeout;
  if (s.min_nodes > 0) {
    effective.min_nodes = s.min_nodes;
    effective.node_multiple = s.node_multiple;
  }
  std::vector<std::string> entries;
  for (const auto& spec : option_specs()) {
    std::string value = effective.value_text(spec.id);
    if (!value.empty()) entries.push_back(spank_env_name(spec.id) + "=" + value);
  }
  return entries;
}

std::vector<std::string> with_environment_entry(const std::vector<std::string>& env, const std::string& entry) {
  std::string name = entry.substr(0, entry.find('=') + 1);
  std::vector<std::string> out;
  out.reserve(env.size() + 1);
  for (const auto& e : env)
    if (!e.starts_with(name)) out.push_back(e);
  out.push_back(entry);
  return out;
}

namespace {

// What the nodes of the job's partitions can give it, from the shape; unknown when there is no
// shape or a partition is not in it (made since safed last published).
NodeCapacity capacity_of(const ClusterShape* shape, const std::string& partitions) {
  NodeCapacity cap;
  if (!shape) return cap;
  std::vector<const PartitionShape*> parts;
  std::size_t pos = 0;
  while (pos <= partitions.size()) {
    std::size_t end = partitions.find(',', pos);
    if (end == std::string::npos) end = partitions.size();
    std::string name = partitions.substr(pos, end - pos);
    pos = end + 1;
    if (name.empty()) continue;
    const PartitionShape* p = shape->find(name);
    if (!p) return cap;
    parts.push_back(p);
  }
  if (parts.empty()) {
    const PartitionShape* d = shape->default_partition();
    if (!d) return cap;
    parts.push_back(d);
  }
  cap.known = true;
  for (const auto* p : parts) {
    cap.gpus_per_node = std::max(cap.gpus_per_node, p->gpus_per_node);
    cap.sockets_per_node = std::max(cap.sockets_per_node, p->sockets_per_node);
    cap.nodes = std::max(cap.nodes, p->nodes);
    cap.whole_node = cap.whole_node || p->whole_node;
  }
  return cap;
}

// What is wrong with an elastic job's node counts ("" when nothing): safed resizes it between
// full_nodes and min_nodes in steps of node_multiple, which only a fixed node count that is not
// tied to a task count allows (Slurm would keep a job asking for N tasks at one per node pending
// on fewer nodes for good).
std::string elastic_problem(const SafeOptions& o, const Submission& sub) {
  const GpuRequest& r = sub.gpus;
  if (!o.min_nodes) {
    return o.node_multiple ? "safe: --safe-node-multiple only applies with --safe-min-nodes; add --safe-min-nodes=M "
                             "or drop it"
                           : "";
  }
  if (!sub.batch)
    return "safe: --safe-min-nodes applies to batch jobs (sbatch) only, which SaFE restarts; submit the job "
           "with sbatch, or drop --safe-min-nodes";
  if (sub.het) return "safe: --safe-min-nodes does not apply to a heterogeneous job; submit its components as jobs of their own";
  if (sub.required_nodes)
    return "safe: --safe-min-nodes cannot be combined with -w/--nodelist (SaFE could not run the job on fewer of "
           "them); drop one";
  if (gpus_in_tres(r.tres_per_job).value_or(0) > 0)
    return "safe: --safe-min-nodes needs GPUs asked per node (--gpus-per-node), not per job (--gpus): a job "
           "on fewer nodes could not hold them all";
  std::uint32_t full = std::max<std::uint32_t>(1, r.min_nodes);
  std::string m = std::to_string(*o.min_nodes), n = std::to_string(full);
  if (r.max_nodes > full)
    return "safe: --safe-min-nodes needs a fixed node count; give -N " + n + " rather than a range";
  if (r.num_tasks > 0 || r.ntasks_per_node > 0)
    return "safe: --safe-min-nodes needs a job that asks for nodes, not tasks (SaFE changes its node count); drop "
           "-n/--ntasks and --ntasks-per-node from the job and give them to srun inside it";
  if (static_cast<std::uint32_t>(*o.min_nodes) > full)
    return "safe: --safe-min-nodes=" + m + " is more than the job's " + n + " node(s); give -N " + m +
           " or more, or a smaller --safe-min-nodes";
  int step = o.node_multiple.value_or(1);
  if (*o.min_nodes % step != 0 || full % static_cast<std::uint32_t>(step) != 0)
    return "safe: --safe-node-multiple=" + std::to_string(step) + " must divide both --safe-min-nodes=" + m +
           " and the job's node count (-N " + n + ")";
  return "";
}

}  // namespace

SubmissionReview review_submission(const SafeConfig& config, const Submission& sub, const JobUser& user,
                                   const ClusterShape* shape) {
  SubmissionReview review;
  // No job is submitted into the spares, not even an administrator's: safed moves failing-over
  // jobs there (an update), and a spare taken by a new job is one the next failover lacks.
  if (std::string spares = named_spare_reservation(sub.reservation); !spares.empty()) {
    review.message = spare_reservation_refusal(spares);
    return review;
  }
  std::vector<std::string_view> env(sub.spank_env.begin(), sub.spank_env.end());
  SpankEnvOptions parsed = parse_spank_job_env(env);
  if (!parsed.errors.empty()) {
    review.message = parsed.errors.front();
    return review;
  }
  // Whose job is it: the workspace it names, or the one whose partition it runs in.
  std::string default_partition;
  const PartitionShape* d = shape ? shape->default_partition() : nullptr;
  if (d) default_partition = d->name;
  WorkspaceChoice choice = choose_workspace(config, parsed.options, sub.partition, d ? &default_partition : nullptr, user);
  if (!choice.rejection.empty()) {
    review.message = choice.rejection;
    return review;
  }
  SafeOptions options = parsed.options;
  if (choice.workspace) options.workspace = choice.workspace->name;
  if (std::string elastic = elastic_problem(options, sub); !elastic.empty()) {
    review.message = elastic;
    return review;
  }

  bool quota = choice.workspace && choice.workspace->gpu_quota > 0;
  NodeCapacity capacity = capacity_of(shape, choice.partition.empty() ? sub.partition : choice.partition);
  GpuCharge charge = charge_gpus(sub.gpus, capacity);
  if (!charge.error.empty()) {
    review.message = charge.error;
    return review;
  }
  if (quota && charge.gpu_shares) {
    review.message = "safe: workspace '" + choice.workspace->name +
                     "' has a GPU quota, which counts whole GPUs; shares of a GPU (--gres=shard or --gres=mps) "
                     "cannot be charged to it: ask for whole GPUs (--gpus or --gpus-per-node)";
    return review;
  }
  // The charge must never be less than what Slurm can give: without the partitions' shape, a
  // quota cannot be charged (an exclusive partition gives every job whole nodes).
  if (quota && !capacity.known) {
    review.message = "safe: workspace '" + choice.workspace->name +
                     "' has a GPU quota, and SaFE cannot yet tell how many GPUs Slurm may give this job: " +
                     (shape ? "partition '" + (choice.partition.empty() ? sub.partition : choice.partition) +
                                  "' is not in the cluster shape safed published yet"
                            : std::string("safed has not published the cluster's partitions")) +
                     "; ask an administrator to start safed (or wait a minute for it) and submit again";
    return review;
  }

  if (quota && charge.gpus > 0 && sub.het &&
      std::find(sub.het->quota_charged.begin(), sub.het->quota_charged.end(), choice.workspace->name) !=
          sub.het->quota_charged.end()) {
    review.message = "safe: component " + std::to_string(sub.het->offset) +
                     " of this heterogeneous job takes GPUs from workspace '" + choice.workspace->name +
                     "' as an earlier component does; Slurm checks each component's licenses on its own, so "
                     "together they could exceed its quota of " + std::to_string(choice.workspace->gpu_quota) +
                     " GPUs. Give the GPUs to one component, or submit the components as separate jobs";
    return review;
  }

  AdmissionRequest request{options, sub.partition, sub.account, sub.qos, sub.licenses, charge.gpus, charge.how};
  AdmissionDecision decision = admit_job(config, request, user);
  review.message = decision.message;
  if (!decision.accepted) return review;
  // Slurm's expedited requeue restarts the job at once, at the top of the queue, after a node
  // failure or a failed epilog (it holds it after any other failure): with SaFE's retries both
  // would act on one failure.
  if (decision.requeue_with_append && sub.expedited_requeue) {
    review.message = "safe: --requeue=expedite and --safe-retries=" + std::to_string(decision.settings.retries) +
                     " would both restart this job after one failure (Slurm's expedited requeue restarts it "
                     "at once after a node failure or a failed epilog); drop --requeue=expedite to let SaFE retry "
                     "it (at once, away from the failed node), or give --safe-retries=0 to leave restarts to Slurm";
    return review;
  }
  if (quota && charge.gpus > 0) review.quota_charged = choice.workspace->name;

  review.accepted = true;
  if (decision.settings.min_nodes > 0) {
    decision.settings.full_nodes = static_cast<int>(std::max<std::uint32_t>(1, sub.gpus.min_nodes));
    // The job's tasks learn its full size here (SAFE_FULL_NNODES); only batch jobs are elastic
    // (only they are requeued), and only they have an environment to carry it.
    review.changes.environment_entry = "SAFE_FULL_NNODES=" + std::to_string(decision.settings.full_nodes);
  }
  review.settings = decision.settings;
  SubmissionChanges& c = review.changes;
  c.partition = decision.partition;
  if (!c.partition && choice.workspace && sub.partition.empty() && !choice.partition.empty())
    c.partition = choice.partition;  // the default partition, made explicit: the charge was for it
  c.account = decision.account;
  c.qos = decision.qos;
  c.licenses = decision.licenses;
  if (sub.het && sub.het->offset > 0 && c.licenses && *c.licenses != sub.licenses) {
    // The whole heterogeneous job starts and ends together: its leader holds the charge.
    std::string added = *c.licenses;
    if (!sub.licenses.empty() && added.starts_with(sub.licenses + ",")) added.erase(0, sub.licenses.size() + 1);
    c.leader_licenses = added;
    c.licenses.reset();
  }
  c.requeue_with_append = decision.requeue_with_append;
  if (quota && charge.gpus > 0 && charge.max_nodes) {
    c.max_nodes = charge.max_nodes;
    // Only a job that gave an open range (-N 2-) could have meant more; without -N Slurm gives one.
    if (sub.gpus.min_nodes > 0) {
      std::string notice = "the job may use at most " + std::to_string(*charge.max_nodes) +
                           " node(s), what its GPUs are charged for (give -N MIN-MAX to allow more)";
      review.message += (review.message.empty() ? "safe: " : "; ") + notice;
    }
  }
  c.admin_comment = merge_admin_comment(sub.admin_comment, format_job_metadata({decision.settings, 0, sub.now, ""}));

  std::vector<std::string> rewritten;
  for (const auto& entry : sub.spank_env)
    if (!std::string_view(entry).starts_with("_SLURM_SPANK_OPTION_safe_")) rewritten.push_back(entry);
  for (auto& entry : settings_spank_env(decision.settings)) rewritten.push_back(std::move(entry));
  c.spank_env = std::move(rewritten);
  return review;
}

Status review_update(const SafeConfig& config, const JobUpdate& update, const JobUser& user, bool is_admin) {
  if (is_admin) return ok_status();
  auto refuse = [](std::string message) { return Status(Error{std::move(message), true}); };
  if (update.reservation)
    if (std::string spares = named_spare_reservation(*update.reservation); !spares.empty())
      return refuse(spare_reservation_refusal(spares));
  bool quotas = false;
  for (const auto& w : config.workspaces) quotas = quotas || w.gpu_quota > 0;
  if (quotas && update.licenses)
    return refuse("safe: a job's licenses cannot be changed while workspace GPU quotas are configured (the update "
                  "would replace the safe_ws_* quota license); cancel the job and submit it again");
  if (quotas && update.changes_gpu_request)
    return refuse("safe: a job's GPU request and node or task counts cannot be changed after submission while "
                  "workspace GPU quotas are configured; cancel the job and submit it again");
  if (update.partition) {
    for (const auto& w : config.workspaces) {
      if (w.partition.empty() || w.partition != *update.partition) continue;
      if (!is_member(w, user))
        return refuse("safe: partition '" + w.partition + "' belongs to workspace '" + w.name + "', of which user '" +
                      user.name + "' is not a member");
      // The job was charged (or not) for where it was submitted: moving into a quota is a new job.
      if (w.gpu_quota > 0)
        return refuse("safe: partition '" + w.partition + "' belongs to workspace '" + w.name +
                      "', which has a GPU quota; a job cannot be moved there: cancel it and submit it with -p " +
                      w.partition);
    }
  }
  return ok_status();
}

}  // namespace safe
