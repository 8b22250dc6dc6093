// The GPU checks: pure functions of a GpuQuery (what the backend reported, or why it did not) and
// the thresholds. One CheckResult per check for the whole node; its detail names the first failing
// GPU, e.g. "gpu3 uncorrectable ECC=2 (+1 more)".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/gpu_grid.hpp"
#include "common/gpu_snapshot.hpp"
#include "common/health_check.hpp"

namespace safe {

struct GpuQuery {
  enum class Outcome { ok, timed_out, failed, no_backend };
  Outcome outcome = Outcome::no_backend;
  GpuSnapshot snapshot;
  std::string detail;  // why it timed out or failed
};

struct GpuCheckScope {
  // The prolog/epilog gate: only these GPU indices (the job's); nullopt = every GPU.
  std::optional<std::vector<int>> only_gpus;
  // Whether the node runs no job, for the stray-use check; nullopt: not known, the check is skipped.
  std::optional<bool> node_idle;
};

std::vector<CheckResult> evaluate_gpu_checks(const GpuQuery& query, const HealthConfig& config, const GpuCheckScope& scope);

// The same run GPU by GPU, for the node's GPU grid (common/gpu_grid.hpp): which GPU failed which
// per-GPU check, before hysteresis. Checks in health.disabled_checks are left out, as from the run.
GpuGrid gpu_grid(const GpuQuery& query, const HealthConfig& config, const GpuCheckScope& scope);

}  // namespace safe
