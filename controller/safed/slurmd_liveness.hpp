// Dead-node detection faster than Slurm's SlurmdTimeout: safed probes the slurmd port of every
// node that runs a SaFE job, and after a run of failed probes sets the node DOWN itself, so that
// Slurm ends the job at once and safed's failover restarts it elsewhere. This file is the pure
// part: what one probe does to a node's record, what the records call for, and which nodes to
// probe. The sockets are in slurmd_prober.cpp, the Slurm calls in dead_node_detector.cpp.
#pragma once

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "common/slurm/client.hpp"

namespace safe {

// The controller's reason for a node it set DOWN because its slurmd stopped answering. Neither
// the health checker ("SaFE:") nor the quarantine ("SaFE-quarantine:") owns it.
inline constexpr std::string_view kUnreachablePrefix = "SaFE-unreachable:";

// connected: slurmd answered: it accepted the connection, read the probe's end of input and
// closed its side. refused: the host answers but nothing listens: slurmd is not running (a
// restart, or a crash; its jobs' steps run on without it). timed_out: no handshake within the
// timeout (host dead, network partition, or an accept backlog full). silent: the handshake
// completed (the kernel does that for a listening socket) but slurmd never closed: a slurmd that
// is stopped or hung. failed: any other error (no route, bad address).
enum class ProbeOutcome { connected, refused, timed_out, silent, failed };
std::string_view to_string(ProbeOutcome o);

struct ProbeTarget {
  std::string node, host;
  int port = 0;
};

struct ProbeResult {
  std::string node;
  ProbeOutcome outcome = ProbeOutcome::connected;
  std::string address;  // host:port as probed
};

struct LivenessPolicy {
  int failures_to_down = 3;     // consecutive failed probes before safed sets the node DOWN
  int successes_to_return = 2;  // consecutive answered probes before safed resumes a node it downed
  // A run of failures that looks like a slurmd restart (see SlurmdLiveness::restart_like): the
  // node is set DOWN only once it has lasted this long. slurmd restarting does not exit before
  // the prologs and epilogs it runs have ended, and accepts connections before it serves them
  // (while it runs its startup health check); running jobs survive a restart, and downing the
  // node would end them.
  long long restart_grace_ms = 60000;
};

// What safed remembers of one node's slurmd between probe rounds.
struct SlurmdLiveness {
  int failures = 0, successes = 0;  // consecutive
  long long first_failure_ms = 0;   // when the current run of failures began
  long long last_probe_ms = 0;
  // The current run of failures began with a refused connection (the host up, slurmd not
  // running) and the host has answered every probe since: refused, or accepted but not yet
  // served (a slurmd starting up). A probe the host does not answer at all ends it.
  bool restart_like = false;
  bool restart_noted = false;  // the run was taken for a restart (logged once)
  ProbeOutcome last = ProbeOutcome::connected;
  std::string address;
};

SlurmdLiveness after_probe(SlurmdLiveness s, const ProbeResult& r, long long now_ms);

// restarting: the node has failed enough probes to be downed, all of them refused: slurmd is
// taken for restarting and given the policy's restart grace (said once per run of failures).
enum class LivenessAction { none, set_down, resume, restarting };

// What Slurm's latest view and the probe record call for. Never touches a quarantined node, never
// downs a node Slurm already has DOWN, and resumes only nodes that carry the controller's
// unreachable reason once their slurmd answers again and Slurm no longer flags them as not
// responding. Updates the record so that failures count only while Slurm has the node in
// service, and each DOWN starts a fresh count: a node Slurm returns to service itself
// (ReturnToService=2) is never downed again for the failures that downed it.
LivenessAction judge_liveness(SlurmdLiveness& s, const SlurmNode& node, const LivenessPolicy& policy);

// True while the record's failures look like a restart and are within the restart grace: the node
// is not taken for unanswering (a failover leaves it to Slurm, which ends the job there once
// slurmd is back).
bool restarting(const SlurmdLiveness& s, const LivenessPolicy& policy);

// "SaFE-unreachable: slurmd 10.0.0.4:6818 connection refused x3 over 2.0 s"
std::string unreachable_reason(const SlurmdLiveness& s, long long now_ms);

bool is_unreachable_reason(std::string_view reason);
// Taken out of service by safed for an unreachable slurmd (DOWN and DRAIN with its reason, or
// only DRAIN once Slurm let the node register again): safed alone returns it.
bool out_of_service_by_safe(const SlurmNode& node);

// The nodes to probe: those in `busy` (running SaFE jobs) that Slurm does not already have DOWN,
// those the controller downed as unreachable (to see them come back), and those in `lost` (Slurm
// set them DOWN as not responding: FailoverPlanner::nodes_awaiting_probe). Quarantined nodes and
// nodes without an address are left out.
std::vector<ProbeTarget> probe_targets(const std::vector<SlurmNode>& nodes, const std::unordered_set<std::string>& busy,
                                       const std::unordered_set<std::string>& lost = {});

}  // namespace safe
