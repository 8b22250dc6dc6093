// Evidence for the controller's failure classification: one small JSON record per job and node
// under <health.state_dir>/evidence/, written by the epilog (and by a prolog that failed the job).
#pragma once

#include <string>
#include <vector>

#include "common/health_check.hpp"
#include "common/result.hpp"

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
// <dir>/evidence/<job_id>.<node>.epilog.json for the epilog (one per node: a shared state
// directory holds every node's), <dir>/evidence/<job_id>.prolog.json for the prolog (the run it
// refused is inside). The names are controller/safed/job_files.hpp's.
std::string evidence_path(const std::string& state_dir, const JobEvidence& evidence);
// Written atomically under a temporary name of its own (nodes sharing the directory never write
// the same file), then renamed into place. safed deletes a job's records once it has read them.
Status write_evidence(const std::string& state_dir, const JobEvidence& evidence);
// Whether the epilog has anything safed could use: a failing check, a stray killed, a drain.
bool worth_recording(const JobEvidence& evidence);

}  // namespace safe
