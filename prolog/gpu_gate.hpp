// The prolog/epilog GPU gate: which GPUs a job holds, which health level it asked for, and whether
// its GPUs pass. Pure functions of the environment Slurm hands the prolog and of a GPU query.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "healthcheck/gpu_checks.hpp"

namespace safe {

// SLURM_JOB_GPUS: "0,1,4" or ranges "0-3,6"; nullopt when malformed.
std::optional<std::vector<int>> parse_job_gpus(const std::string& text);

// --safe-health from the job (SPANK__SLURM_SPANK_OPTION_safe_safe_health), else the default of the
// job's workspace (SPANK__SLURM_SPANK_OPTION_safe_safe_workspace), else admission.default_health.
HealthLevel job_health_level(const std::map<std::string, std::string>& env, const SafeConfig& config);

inline constexpr const char* kSpankHealthVar = "SPANK__SLURM_SPANK_OPTION_safe_safe_health";
inline constexpr const char* kSpankWorkspaceVar = "SPANK__SLURM_SPANK_OPTION_safe_safe_workspace";

struct GateResult {
  bool pass = true;
  std::vector<CheckResult> blocking;  // failures that stop the job
  std::vector<CheckResult> results;   // every check on the job's GPUs
  bool drain = false;                 // a blocking failure is critical: a node fault, drained with a SaFE reason
};

// standard: critical failures on the job's GPUs block (and drain). strict: warnings (correctable
// ECC, PCIe replays, memory or processes left on the GPUs) block the job too, but they drain
// nothing: --safe-health is a user's option, and only what every job must avoid (critical
// findings) takes a shared node out of service. off: nothing runs. "unknown" never blocks: a slow
// GPU library must not turn into a failed prolog.
GateResult evaluate_gate(const GpuQuery& query, const HealthConfig& config, const std::vector<int>& gpus, HealthLevel level);

}  // namespace safe
