// The socket side of dead-node detection: a TCP connect to each slurmd's port, all in parallel
// (non-blocking sockets and poll, at most `max_in_flight` open at once), each given `timeout_ms`.
// A completed handshake is closed at once; nothing is sent.
#pragma once

#include <vector>

#include "controller/safed/slurmd_liveness.hpp"

namespace safe {

// One result per target, in the targets' order. Blocks the calling thread for at most about
// ceil(targets / max_in_flight) * timeout_ms (plus name resolution of non-numeric addresses).
std::vector<ProbeResult> probe_slurmds(const std::vector<ProbeTarget>& targets, int timeout_ms, int max_in_flight);

}  // namespace safe
