// The socket side of dead-node detection: a TCP connect to each slurmd's port, all in parallel
// (non-blocking sockets and poll, at most `max_in_flight` open at once), each given `timeout_ms`.
// Once the handshake completes the probe ends its output (shutdown) without sending anything and
// waits for slurmd to close its side: slurmd accepts the connection, finds no message and closes
// it. The kernel completes a handshake for a listening socket by itself, so only the close shows
// that slurmd itself is there: a stopped or hung slurmd never closes (ProbeOutcome::silent).
#pragma once

#include <sys/socket.h>

#include <functional>
#include <string>
#include <vector>

#include "controller/safed/slurmd_liveness.hpp"

namespace safe {

struct SocketAddress {
  sockaddr_storage addr{};
  socklen_t len = 0;
};

// A target's addresses, in the resolver's order: getaddrinfo's (a name such as localhost may give
// ::1 before 127.0.0.1, while slurmd listens on IPv4 only unless told otherwise).
std::vector<SocketAddress> resolve_target(const ProbeTarget& target);

// One result per target, in the targets' order. A target whose address does not connect (refused,
// timed out, failed) is tried at its next address: it counts as connected when any address
// answers, else by its last address's outcome (a failure outright never hides a refusal or a
// timeout). An address that connects but stays silent is the target's answer: slurmd is there and
// does not serve. Blocks the calling thread for at most about ceil(targets / max_in_flight) * timeout_ms
// per address (plus name resolution of non-numeric addresses). `turn`, when set, is called before
// each wait for the sockets (safed's watchdog: a long round is not a hung one).
std::vector<ProbeResult> probe_slurmds(
    const std::vector<ProbeTarget>& targets, int timeout_ms, int max_in_flight,
    const std::function<std::vector<SocketAddress>(const ProbeTarget&)>& resolve = resolve_target,
    const std::function<void()>& turn = {});

}  // namespace safe
