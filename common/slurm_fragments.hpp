// The slurm.conf and plugstack.conf lines SaFE needs, rendered from safe.yaml by
// `safectl render-slurm`. The test cluster installs SaFE with exactly these lines, so tests
// exercise what admins deploy.
#pragma once

#include <string>

#include "common/config.hpp"

namespace safe {

struct FragmentPaths {
  std::string config_path;     // safe.yaml the plugins read; passed to spank_safe.so when not the default
  std::string plugin_dir;      // where spank_safe.so and job_submit_safe.so are installed
  std::string sbin_dir;        // where safe-healthcheck, safe-prolog and safe-epilog are installed
  std::string plugstack_path;  // when set, slurm.conf gets PlugStackConfig=<this>
};

struct SlurmFragments {
  std::string slurm_conf;
  std::string plugstack_conf;
};

SlurmFragments render_slurm_fragments(const SafeConfig& config, const FragmentPaths& paths);

// "safe_ws_ml:64,safe_ws_cv:16" for the workspaces with a GPU quota; "" when none has one.
std::string workspace_licenses(const SafeConfig& config);

}  // namespace safe
