// Evidence for the controller's failure classification: one small JSON record per job and node
// under <health.state_dir>/evidence/, written by the epilog (and by a prolog that failed the job).
#pragma once

#include <string>
#include <vector>

#include "common/health_check.hpp"

namespace safe {

struct JobEvidence {
  std::string job_id;
  std::string node;
  std::string stage;  // "prolog" or "epilog"
  int restart_count = -1;  // Slurm's restart count of the job's run (SLURM_JOB_RESTART_COUNT), -1 unknown
  long long time = 0;  // unix seconds
  std::string health_level;
  std::vector<int> gpus;
  std::string gpu_query;  // ok, timed_out, failed, no_backend
  std::vector<CheckResult> failing;  // failed checks on the job's GPUs
  std::vector<int> stray_pids_killed;
  std::string action;  // drain, none, drain-failed; "refuse" while the prolog has not drained yet
  std::string reason;
};

std::string to_json(const JobEvidence& evidence);
// <dir>/<job_id>.json for the epilog, <dir>/<job_id>.prolog.json for the prolog.
std::string evidence_path(const std::string& state_dir, const JobEvidence& evidence);
bool write_evidence(const std::string& state_dir, const JobEvidence& evidence, std::string& error);

}  // namespace safe
