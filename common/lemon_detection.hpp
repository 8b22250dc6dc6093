// Lemon nodes: a node that keeps faulting costs more goodput than it adds, even if each fault
// heals. K faults within a window quarantine it (a drain only an administrator ends).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace safe {

// Drain reasons: the health checker owns "SaFE:" (and resumes what it drained); the controller
// owns "SaFE-quarantine:", which nothing resumes automatically.
inline constexpr std::string_view kSafeDrainPrefix = "SaFE:";
inline constexpr std::string_view kQuarantinePrefix = "SaFE-quarantine:";

// True when at least `faults` of `fault_times` (unix seconds) lie within (now - window_s, now].
bool is_lemon(const std::vector<long long>& fault_times, long long now, int faults, int window_s);

std::string quarantine_reason(const std::string& node, int faults, int window_s, const std::string& last_fault);

}  // namespace safe
