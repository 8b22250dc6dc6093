// One run of safe-healthcheck: every check in parallel (each with its own time limit), hysteresis
// over the per-check history, the drain/resume decision, and the Slurm call that carries it out.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/drain_decision.hpp"
#include "common/health_history.hpp"
#include "common/node_fs.hpp"
#include "common/process_runner.hpp"
#include "healthcheck/gpu_checks.hpp"
#include "healthcheck/gpu_collector.hpp"
#include "common/slurm/node_control.hpp"

namespace safe {

struct RunOptions {
  SafeConfig config;
  std::string config_path;  // passed to the GPU child; empty: its own default
  std::string node;
  NodeFs fs;
  std::string self_exe;
  bool use_slurm = true;      // false (--no-slurm): report only, never call the controller
  bool force_startup = false; // --startup
  std::string slurmd_instance;  // see node_setup.hpp; "" when not run by slurmd
};

// Exit codes of safe-healthcheck (docs/health.md).
enum ExitCode : int {
  kExitHealthy = 0,      // nothing fails (unknowns allowed)
  kExitCritical = 1,     // a critical check fails (drained, or pending its run count)
  kExitUsage = 2,        // bad command line or config
  kExitSuspect = 3,      // only warning checks fail: the node is suspect
  kExitNotRun = 4,       // another run holds the lock, or the state directory is unusable
};

struct RunReport {
  std::string node;
  long long time = 0;  // unix seconds
  double elapsed_ms = 0;
  std::string gpu_backend;
  bool startup_run = false;
  std::vector<CheckResult> results;  // after hysteresis (repeated unknowns escalated)
  RunVerdict verdict;
  DrainDecision decision;
  bool action_ok = true;
  std::string action_error;
  std::string status;  // healthy | suspect | failing | unhealthy | not-run
  int exit_code = kExitHealthy;
  std::string error;   // why the run did not happen (exit 4)
  // Why the run's history (and this report) could not be saved under health.state_dir (a full
  // or read-only disk): the run acted as usual, but its counts toward a drain or a resume did
  // not advance; "" when saved.
  std::string state_error;
  std::string metrics_error;  // why health.metrics_dir's file could not be written; "" when it was
  GpuGrid gpus;               // which GPU failed which check in this run (before hysteresis)
};

RunReport run_health_once(const RunOptions& options, ProcessRunner& runner, SlurmNodeControl& slurm);

std::string summary_line(const RunReport& report);  // "safe-healthcheck: n1: ..."
std::string report_json(const RunReport& report);
// The run as Prometheus text for node_exporter's textfile collector: when it ran (an alert finds
// nodes whose checker stopped), its status and each check's result.
std::string report_metrics(const RunReport& report);

}  // namespace safe
