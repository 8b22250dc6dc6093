// Kernel log patterns within a time window: NVIDIA XIDs, amdgpu RAS errors and GPU resets, XGMI
// link errors, machine checks, and PCIe bus-error storms. /dev/kmsg is read natively (one record
// per read, non-blocking), never by running dmesg.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "common/health_check.hpp"
#include "common/node_fs.hpp"
#include "common/result.hpp"

namespace safe {

struct KmsgRecord {
  std::uint64_t usec = 0;  // since boot
  std::string message;
};

// Parses /dev/kmsg records ("PRI,SEQ,USEC,FLAGS;message"); continuation lines are skipped.
std::vector<KmsgRecord> parse_kmsg(std::string_view text);

// Reads <root>/dev/kmsg to its end (a device or, in tests, a plain file); false when unreadable.
Result<std::vector<KmsgRecord>> read_kmsg(const NodeFs& fs);
// Seconds since boot from /proc/uptime; -1 when unreadable.
double read_uptime_s(const NodeFs& fs);

// Two results: kmsg_critical (drains at once) and kmsg_warning (suspect).
std::vector<CheckResult> evaluate_kmsg(const std::vector<KmsgRecord>& records, std::uint64_t now_usec,
                                       const HealthThresholds& thresholds);

// The whole check against the node: read, then evaluate; unknown when the log cannot be read.
std::vector<CheckResult> run_kmsg_check(const NodeFs& fs, const HealthThresholds& thresholds);

}  // namespace safe
