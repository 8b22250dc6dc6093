#include "common/job_environment.hpp"

#include <algorithm>

namespace safe {

JobSettings job_settings_on_node(const SafeOptions& options, const SafeConfig* config, const JobUser* user) {
  const SafeConfig defaults;
  if (config && user) {
    AdmissionRequest request;
    request.options = options;
    AdmissionDecision decision = admit_job(*config, request, *user);
    if (decision.accepted) return decision.settings;
  }
  // As given, with the built-in defaults where the job gave nothing.
  AdmissionRequest request;
  request.options = options;
  request.options.workspace.reset();  // no workspace policy to apply: keep the name only
  SafeConfig open = config ? *config : defaults;
  open.workspaces.clear();
  open.admission.require_workspace = false;
  open.admission.max_retries = kMaxRetries;
  JobSettings settings = admit_job(open, request, JobUser{}).settings;
  settings.workspace = options.workspace.value_or("");
  return settings;
}

std::vector<std::pair<std::string, std::string>> safe_job_environment(const JobSettings& s, int restart_count,
                                                                      const std::string& resume_from, int nodes,
                                                                      int full_nodes) {
  nodes = std::max(1, nodes);
  return {
      // An elastic trainer re-shards when it runs on fewer nodes than it was submitted for.
      {"SAFE_NNODES", std::to_string(nodes)},
      {"SAFE_FULL_NNODES", std::to_string(std::max(nodes, full_nodes))},
      {"SAFE_WORKSPACE", s.workspace},
      {"SAFE_ATTEMPT", std::to_string(restart_count + 1)},
      {"SAFE_MAX_RETRIES", std::to_string(s.retries)},
      {"SAFE_CKPT_DIR", s.ckpt_dir},
      {"SAFE_RESUME_FROM", resume_from},
      {"SAFE_CKPT_SIGNAL", s.ckpt_signal.to_string()},
      // Touched by the job to show progress; safed's hang detection reads its time.
      {"SAFE_HEARTBEAT_FILE", s.ckpt_dir.empty() ? "" : s.ckpt_dir + "/.safe-heartbeat"},
  };
}

}  // namespace safe
