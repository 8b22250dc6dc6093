// The command a workload's container runs on Kubernetes: a small POSIX sh prelude in front of
// the user's command. The bridge cannot see the checkpoint volume, and the kubelet only knows
// SIGTERM, so the pod itself does what the SPANK plugin and safed do on Slurm:
//  - SAFE_RESUME_FROM: the newest complete checkpoint in $SAFE_CKPT_DIR, chosen by the rule of
//    common/checkpoint_scan (a directory holding the marker as a regular file, the newest marker
//    wins, ties to the greater name, symbolic links not followed), exported before the command;
//  - the checkpoint signal: SIGTERM (pod deletion, Job suspension) is turned into the job's
//    checkpoint signal for the command, and the prelude waits for the command to end, within the
//    pod's terminationGracePeriodSeconds (the signal's lead time).
// Needs /bin/sh and `stat -c %Y` (coreutils or busybox) in the image.
#pragma once

#include <string>
#include <vector>

#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {

// The prelude, run as `sh -c PRELUDE safe-entrypoint COMMAND...`. complete_marker: the cluster's
// checkpoint.complete_marker (a plain file name); checkpoint_signal: the signal number forwarded
// on SIGTERM (0: forward SIGTERM itself).
std::string kube_entrypoint_script(const std::string& complete_marker, int checkpoint_signal);

// The container's command: the prelude, then the spec's command (or `/bin/bash -c SCRIPT`).
std::vector<std::string> kube_container_command(const WorkloadSpec& spec, const std::string& complete_marker,
                                                int checkpoint_signal);

}  // namespace safe::bridge
