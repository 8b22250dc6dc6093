// The SAFE_* variables a job's tasks see (set by the SPANK plugin inside slurmstepd, and by the
// REST bridge's Kubernetes target), computed from the job's effective SaFE settings.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/admission.hpp"

namespace safe {

// The job's effective settings on a node. slurmctld's policy decision reaches the prolog but not
// the job's own environment, so the node applies the same pure policy (admit_job) to the options
// with the same config. Without a config, or if the config no longer admits the job (it changed
// since submission), the options are taken as given.
JobSettings job_settings_on_node(const SafeOptions& options, const SafeConfig* config, const JobUser* user);

// restart_count: Slurm's SLURM_RESTART_COUNT (0 on the first run). resume_from: the newest
// complete checkpoint ("" if none). nodes: the job's node count now (SLURM_JOB_NUM_NODES), and
// full_nodes the count it was submitted with (fewer after safed shrank it; 0: the same).
std::vector<std::pair<std::string, std::string>> safe_job_environment(const JobSettings& settings, int restart_count,
                                                                      const std::string& resume_from, int nodes,
                                                                      int full_nodes);

}  // namespace safe
