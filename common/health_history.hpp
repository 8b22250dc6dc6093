// Hysteresis: a node is drained only after a check has failed K runs in a row, and resumed only
// after every check that failed has passed M runs in a row. The per-check counts are kept in a
// small JSON file per node, so they survive restarts of the checker and of the node agent.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/health_check.hpp"

namespace safe {

struct HysteresisPolicy {
  int fail_runs = 2;           // critical checks that are not urgent
  int urgent_fail_runs = 1;    // urgent critical checks (lost GPU, uncorrectable ECC, ...)
  int pass_runs = 3;           // before a drained node is resumed
  int unknown_runs = 3;        // an "unknown" repeated this often counts as a failure
};

struct CheckHistory {
  int fails = 0;       // consecutive failed runs (0 while passing)
  int passes = 0;      // consecutive passing runs
  int unknowns = 0;    // consecutive unknown runs
  bool recovering = false;  // failed, and has not passed pass_runs in a row since
  std::string detail;       // last detail seen
};

struct HealthHistory {
  std::map<std::string, CheckHistory> checks;
  std::string slurmd_instance;  // "pid:starttime" of the slurmd seen last: detects the startup run
  long long last_run = 0;       // unix time
  int clean_runs = 0;           // consecutive runs without a failing critical check
};

// What one run means for the node, after hysteresis.
struct RunVerdict {
  std::vector<CheckResult> effective;      // this run's results, unknowns escalated where they repeat
  std::optional<CheckResult> drain_cause;  // first critical check past its fail count
  std::vector<CheckResult> pending;        // critical failures not yet past their fail count
  std::vector<CheckResult> warnings;       // failing warning checks: the node is suspect
  // Nothing fails, nothing is still recovering, and the node has had pass_runs clean runs in a row
  // (so a lost history file cannot resume a node after a single pass).
  bool all_recovered = false;
  int clean_runs = 0;                      // the node's consecutive clean runs (for messages)
};

RunVerdict apply_run(HealthHistory& history, const std::vector<CheckResult>& results, const HysteresisPolicy& policy);

std::string to_json(const HealthHistory& history);
// A missing or damaged file reads as an empty history: the worst that costs is K more runs.
HealthHistory health_history_from_json(std::string_view text);

}  // namespace safe
