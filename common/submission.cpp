#include "common/submission.hpp"

#include <string_view>

#include "common/job_metadata.hpp"

namespace safe {

std::vector<std::string> settings_spank_env(const JobSettings& s) {
  SafeOptions effective;
  if (!s.workspace.empty()) effective.workspace = s.workspace;
  effective.retries = s.retries;
  if (!s.ckpt_dir.empty()) effective.ckpt_dir = s.ckpt_dir;
  effective.ckpt_signal = s.ckpt_signal;
  effective.health = s.health;
  effective.hang_timeout = s.hang_timeout;
  std::vector<std::string> entries;
  for (const auto& spec : option_specs()) {
    std::string value = effective.value_text(spec.id);
    if (!value.empty()) entries.push_back(spank_env_name(spec.id) + "=" + value);
  }
  return entries;
}

SubmissionReview review_submission(const SafeConfig& config, const Submission& sub, const JobUser& user) {
  SubmissionReview review;
  std::vector<std::string_view> env(sub.spank_env.begin(), sub.spank_env.end());
  SpankEnvOptions parsed = parse_spank_job_env(env);
  if (!parsed.errors.empty()) {
    review.message = parsed.errors.front();
    return review;
  }
  GpuCount gpus = count_requested_gpus(sub.gpus);
  if (!gpus.error.empty()) {
    review.message = gpus.error;
    return review;
  }

  AdmissionRequest request{parsed.options, sub.partition, sub.account, sub.qos, sub.licenses, gpus.gpus};
  AdmissionDecision decision = admit_job(config, request, user);
  review.message = decision.message;
  if (!decision.accepted) return review;

  review.accepted = true;
  review.settings = decision.settings;
  SubmissionChanges& c = review.changes;
  c.partition = decision.partition;
  c.account = decision.account;
  c.qos = decision.qos;
  c.licenses = decision.licenses;
  c.requeue_with_append = decision.requeue_with_append;
  c.admin_comment = merge_admin_comment(sub.admin_comment, format_job_metadata({decision.settings, 0, ""}));

  std::vector<std::string> rewritten;
  for (const auto& entry : sub.spank_env)
    if (!std::string_view(entry).starts_with("_SLURM_SPANK_OPTION_safe_")) rewritten.push_back(entry);
  for (auto& entry : settings_spank_env(decision.settings)) rewritten.push_back(std::move(entry));
  c.spank_env = std::move(rewritten);
  return review;
}

std::optional<std::string> review_update(const SafeConfig& config, const JobUpdate& update, const JobUser& user,
                                         bool is_admin) {
  if (is_admin) return std::nullopt;
  bool quotas = false;
  for (const auto& w : config.workspaces) quotas = quotas || w.gpu_quota > 0;
  if (quotas && update.licenses)
    return "safe: a job's licenses cannot be changed while workspace GPU quotas are configured (the update "
           "would replace the safe_ws_* quota license); cancel the job and submit it again";
  if (quotas && update.changes_gpu_request)
    return "safe: a job's GPU request and node or task counts cannot be changed after submission while "
           "workspace GPU quotas are configured; cancel the job and submit it again";
  if (update.partition) {
    for (const auto& w : config.workspaces) {
      if (w.partition.empty() || w.partition != *update.partition || is_member(w, user)) continue;
      return "safe: partition '" + w.partition + "' belongs to workspace '" + w.name + "', of which user '" +
             user.name + "' is not a member";
    }
  }
  return std::nullopt;
}

}  // namespace safe
