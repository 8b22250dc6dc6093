#include "common/slurm_fragments.hpp"

#include "common/admission.hpp"

namespace safe {

std::string workspace_licenses(const SafeConfig& config) {
  std::string out;
  for (const auto& w : config.workspaces) {
    if (w.gpu_quota <= 0) continue;
    out += (out.empty() ? "" : ",") + workspace_license(w.name) + ":" + std::to_string(w.gpu_quota);
  }
  return out;
}

SlurmFragments render_slurm_fragments(const SafeConfig& config, const FragmentPaths& paths) {
  SlurmFragments f;
  std::string source = paths.config_path.empty() ? std::string(SAFE_DEFAULT_CONFIG_PATH) : paths.config_path;
  f.slurm_conf = "# SaFE for Slurm: slurm.conf lines, rendered by `safectl render-slurm` from " + source +
                 ".\n# Merge them into slurm.conf (or Include this file), then run `scontrol reconfigure`.\n"
                 "# Rerun render-slurm after changing workspace quotas in safe.yaml.\n";
  if (!paths.plugstack_path.empty()) f.slurm_conf += "PlugStackConfig=" + paths.plugstack_path + "\n";
  f.slurm_conf += "JobSubmitPlugins=safe\n";
  std::string licenses = workspace_licenses(config);
  if (!licenses.empty()) f.slurm_conf += "Licenses=" + licenses + "\n";
  // Node health: the checker drains bad nodes on its own, in every node state; the GPU gate
  // fails a job's prolog on a bad GPU, and nohold_on_prolog_fail lets Slurm place the job
  // elsewhere instead of holding it.
  f.slurm_conf += "HealthCheckProgram=" + paths.sbin_dir + "/safe-healthcheck\n";
  f.slurm_conf += "HealthCheckInterval=" + std::to_string(config.health.interval_s) + "\n";
  f.slurm_conf += "HealthCheckNodeState=ANY\n";
  f.slurm_conf += "Prolog=" + paths.sbin_dir + "/safe-prolog\n";
  f.slurm_conf += "Epilog=" + paths.sbin_dir + "/safe-epilog\n";
  f.slurm_conf += "# Slurm keeps only the last SchedulerParameters line: add this to yours.\n";
  f.slurm_conf += "SchedulerParameters=nohold_on_prolog_fail\n";

  f.plugstack_conf = "# SaFE for Slurm: plugstack.conf line, rendered by `safectl render-slurm`.\n";
  f.plugstack_conf += "required " + paths.plugin_dir + "/spank_safe.so";
  if (source != SAFE_DEFAULT_CONFIG_PATH) f.plugstack_conf += " config=" + source;
  f.plugstack_conf += "\n";
  return f;
}

}  // namespace safe
