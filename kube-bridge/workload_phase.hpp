// A workload's phase as the REST API shows it, on either target: Slurm's job states and the
// Kubernetes target's own bookkeeping both map onto these five.
#pragma once

#include <optional>
#include <string_view>

namespace safe::bridge {

enum class WorkloadPhase { pending, running, stopped, succeeded, failed };

// As the API writes it: Pending, Running, Stopped, Succeeded, Failed.
constexpr std::string_view to_string(WorkloadPhase p) {
  switch (p) {
    case WorkloadPhase::pending: return "Pending";
    case WorkloadPhase::running: return "Running";
    case WorkloadPhase::stopped: return "Stopped";
    case WorkloadPhase::succeeded: return "Succeeded";
    case WorkloadPhase::failed: return "Failed";
  }
  return "Failed";
}

// A phase by its name in any case ("running", "Running"); nullopt for anything else.
inline std::optional<WorkloadPhase> parse_workload_phase(std::string_view s) {
  for (auto p : {WorkloadPhase::pending, WorkloadPhase::running, WorkloadPhase::stopped, WorkloadPhase::succeeded,
                 WorkloadPhase::failed}) {
    std::string_view name = to_string(p);
    if (name.size() != s.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < s.size() && same; ++i)
      same = (name[i] | 0x20) == (s[i] | 0x20);
    if (same) return p;
  }
  return std::nullopt;
}

// Still going: neither stopped nor ended.
constexpr bool is_active(WorkloadPhase p) { return p == WorkloadPhase::pending || p == WorkloadPhase::running; }

}  // namespace safe::bridge
