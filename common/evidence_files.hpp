// Where safe-prolog and safe-epilog record what they found about a job, for safed: files under
// <health.state_dir>/evidence/. One per job and node from the epilog (a state directory shared by
// all nodes holds every node's record side by side), one per job from the prolog (its refusal,
// with the run it refused inside). safed deletes a job's records once it has classified them.
#pragma once

#include <string>

namespace safe {

inline std::string epilog_evidence_name(const std::string& job_id, const std::string& node) {
  return job_id + "." + node + ".epilog.json";
}

inline std::string prolog_evidence_name(const std::string& job_id) { return job_id + ".prolog.json"; }

}  // namespace safe
