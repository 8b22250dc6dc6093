#include "controller/safed/slurmd_prober.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace safe {
namespace {

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// NodeAddr may be a name: the resolver answers numeric addresses without a lookup.
bool resolve(const ProbeTarget& t, sockaddr_storage& addr, socklen_t& len) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (getaddrinfo(t.host.c_str(), std::to_string(t.port).c_str(), &hints, &found) != 0 || !found) return false;
  std::memcpy(&addr, found->ai_addr, found->ai_addrlen);
  len = found->ai_addrlen;
  freeaddrinfo(found);
  return true;
}

ProbeOutcome outcome_of(int err) {
  if (err == 0) return ProbeOutcome::connected;
  if (err == ECONNREFUSED) return ProbeOutcome::refused;
  if (err == ETIMEDOUT) return ProbeOutcome::timed_out;
  return ProbeOutcome::failed;
}

struct InFlight {
  std::size_t index;
  int fd;
  long long deadline;
};

}  // namespace

std::vector<ProbeResult> probe_slurmds(const std::vector<ProbeTarget>& targets, int timeout_ms, int max_in_flight) {
  std::vector<ProbeResult> results(targets.size());
  std::vector<InFlight> open;
  std::vector<pollfd> fds;
  std::size_t next = 0;
  auto finish = [&](std::size_t i, ProbeOutcome o) { results[i].outcome = o; };
  while (next < targets.size() || !open.empty()) {
    // Start connects up to the limit; a connect that is decided at once (refused on loopback,
    // bad address) is recorded without waiting.
    while (next < targets.size() && static_cast<int>(open.size()) < std::max(1, max_in_flight)) {
      std::size_t i = next++;
      const ProbeTarget& t = targets[i];
      results[i].node = t.node;
      results[i].address = t.host + ":" + std::to_string(t.port);
      sockaddr_storage addr;
      socklen_t len = 0;
      if (!resolve(t, addr, len)) {
        finish(i, ProbeOutcome::failed);
        continue;
      }
      int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        finish(i, ProbeOutcome::failed);
        continue;
      }
      if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
        close(fd);
        finish(i, ProbeOutcome::connected);
      } else if (errno == EINPROGRESS) {
        open.push_back({i, fd, now_ms() + timeout_ms});
      } else {
        finish(i, outcome_of(errno));
        close(fd);
      }
    }
    if (open.empty()) continue;
    fds.clear();
    long long now = now_ms(), wait = timeout_ms;
    for (const auto& f : open) {
      fds.push_back({f.fd, POLLOUT, 0});
      wait = std::min(wait, std::max(0LL, f.deadline - now));
    }
    int ready = poll(fds.data(), fds.size(), static_cast<int>(wait));
    if (ready < 0 && errno != EINTR) ready = 0;
    now = now_ms();
    std::vector<InFlight> still;
    for (std::size_t k = 0; k < open.size(); ++k) {
      const InFlight& f = open[k];
      if (fds[k].revents != 0) {
        int err = 0;
        socklen_t elen = sizeof err;
        if (getsockopt(f.fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) err = errno;
        finish(f.index, outcome_of(err));
        close(f.fd);
      } else if (now >= f.deadline) {
        finish(f.index, ProbeOutcome::timed_out);
        close(f.fd);
      } else {
        still.push_back(f);
      }
    }
    open = std::move(still);
  }
  return results;
}

}  // namespace safe
