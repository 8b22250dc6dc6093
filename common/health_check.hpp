// The result of one health check in one run, and how serious a failure of it is.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace safe {

// critical: the node must stop taking jobs (drained once the check has failed enough runs in a row).
// warning: reported and the node marked suspect; never drains by itself.
enum class Severity { warning, critical };

// unknown: the check could not decide (timed out, library unavailable). Not a failure, unless it
// repeats (see HysteresisPolicy::unknown_runs_before_fail).
enum class CheckStatus { pass, fail, unknown };

struct CheckResult {
  std::string check;  // stable name, e.g. "ecc_uncorrectable": the key of its history
  CheckStatus status = CheckStatus::pass;
  Severity severity = Severity::critical;
  // Faults that must drain at once (lost GPU, uncorrectable ECC) use the critical run count;
  // the rest of the critical checks wait for the ordinary one (hysteresis against flapping).
  bool urgent = false;
  std::string detail;  // what was seen, e.g. "gpu3 uncorrectable ECC=2"; becomes the drain reason
};

std::string_view to_string(Severity severity);
std::string_view to_string(CheckStatus status);

CheckResult passed(std::string check, Severity severity, bool urgent, std::string detail = {});
CheckResult failed(std::string check, Severity severity, bool urgent, std::string detail);
CheckResult unknown(std::string check, Severity severity, bool urgent, std::string detail);

// Every check's name, as in docs/health.md and `health.disabled_checks`.
inline constexpr const char* kHealthCheckNames[] = {
    "gpu_count", "gpu_responsive", "ecc_uncorrectable", "ecc_correctable", "retired_memory", "pcie_replay",
    "temperature", "xgmi", "pcie_link", "stray_gpu_use", "kmsg_critical", "kmsg_warning", "numa_locality",
    "mounts", "memory", "ib_ports"};
bool is_health_check_name(std::string_view name);

// "gpu3 ECC=2" or, when several GPUs fail, "gpu3 ECC=2 (+2 more)".
std::string summarize_failures(const std::vector<std::string>& per_gpu_details);

}  // namespace safe
