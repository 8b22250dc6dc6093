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
#include <optional>

namespace safe {
namespace {

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
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
  bool connected = false;  // handshake done, output shut: waiting for slurmd to close
};

// After the handshake: the probe sends nothing and ends its output, so that slurmd reads an end of
// input at once (and logs it as an empty message) and closes.
bool end_output(int fd) { return shutdown(fd, SHUT_WR) == 0; }

// What a readable socket of a connected probe says: slurmd closed (end of input, a reset, or bytes
// it sent before closing) or nothing yet (a wakeup without data).
std::optional<ProbeOutcome> read_reply(int fd) {
  char buf[256];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n >= 0) return ProbeOutcome::connected;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return std::nullopt;
  return ProbeOutcome::connected;  // reset by slurmd: it was there to reset it
}

}  // namespace

// NodeAddr may be a name: the resolver answers numeric addresses without a lookup.
std::vector<SocketAddress> resolve_target(const ProbeTarget& t) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  std::vector<SocketAddress> out;
  if (getaddrinfo(t.host.c_str(), std::to_string(t.port).c_str(), &hints, &found) != 0) return out;
  for (addrinfo* a = found; a; a = a->ai_next) {
    if (a->ai_addrlen > sizeof(sockaddr_storage)) continue;
    SocketAddress s;
    std::memcpy(&s.addr, a->ai_addr, a->ai_addrlen);
    s.len = a->ai_addrlen;
    out.push_back(s);
  }
  freeaddrinfo(found);
  return out;
}

std::vector<ProbeResult> probe_slurmds(const std::vector<ProbeTarget>& targets, int timeout_ms, int max_in_flight,
                                       const std::function<std::vector<SocketAddress>(const ProbeTarget&)>& resolve,
                                       const std::function<void()>& turn) {
  std::vector<ProbeResult> results(targets.size());
  std::vector<std::vector<SocketAddress>> addresses(targets.size());
  std::vector<std::size_t> tried(targets.size(), 0);  // addresses of the target tried so far
  std::vector<InFlight> open;
  std::vector<pollfd> fds;
  std::size_t next = 0;
  // A later address that fails outright (an address family the host lacks) does not hide an
  // earlier one's refusal.
  auto finish = [&](std::size_t i, ProbeOutcome o) {
    if (o != ProbeOutcome::failed || results[i].outcome == ProbeOutcome::failed) results[i].outcome = o;
  };
  // Connects to the target's next addresses until one is in flight or answered: a connect that is
  // decided at once (refused on loopback, an address family the host lacks) moves on at once.
  auto start = [&](std::size_t i) {
    while (tried[i] < addresses[i].size()) {
      const SocketAddress& a = addresses[i][tried[i]++];
      int fd = socket(a.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        finish(i, ProbeOutcome::failed);
        continue;
      }
      if (connect(fd, reinterpret_cast<const sockaddr*>(&a.addr), a.len) == 0) {
        if (!end_output(fd)) {
          finish(i, ProbeOutcome::failed);
          close(fd);
          continue;
        }
        open.push_back({i, fd, now_ms() + timeout_ms, true});
        return;
      }
      if (errno == EINPROGRESS) {
        open.push_back({i, fd, now_ms() + timeout_ms});
        return;
      }
      finish(i, outcome_of(errno));
      close(fd);
    }
  };
  while (next < targets.size() || !open.empty()) {
    if (turn) turn();
    while (next < targets.size() && static_cast<int>(open.size()) < std::max(1, max_in_flight)) {
      std::size_t i = next++;
      const ProbeTarget& t = targets[i];
      results[i].node = t.node;
      results[i].address = t.host + ":" + std::to_string(t.port);
      results[i].outcome = ProbeOutcome::failed;  // no address at all
      addresses[i] = resolve(t);
      start(i);
    }
    if (open.empty()) continue;
    fds.clear();
    long long now = now_ms(), wait = timeout_ms;
    for (const auto& f : open) {
      fds.push_back({f.fd, static_cast<short>(f.connected ? POLLIN : POLLOUT), 0});
      wait = std::min(wait, std::max(0LL, f.deadline - now));
    }
    int ready = poll(fds.data(), fds.size(), static_cast<int>(wait));
    if (ready < 0 && errno != EINTR) ready = 0;
    now = now_ms();
    std::vector<InFlight> still;
    std::vector<std::size_t> retry;  // not connected: their next address
    for (std::size_t k = 0; k < open.size(); ++k) {
      InFlight f = open[k];
      if (f.connected && fds[k].revents != 0) {
        if (auto replied = read_reply(f.fd)) {
          finish(f.index, *replied);
          close(f.fd);
          continue;
        }
      } else if (fds[k].revents != 0) {
        int err = 0;
        socklen_t elen = sizeof err;
        if (getsockopt(f.fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) err = errno;
        if (err == 0 && end_output(f.fd)) {
          f.connected = true;  // now wait, within the same deadline, for slurmd's close
          if (now < f.deadline) {
            still.push_back(f);
            continue;
          }
        }
        finish(f.index, err == 0 ? ProbeOutcome::silent : outcome_of(err));
        close(f.fd);
        if (err != 0) retry.push_back(f.index);
        continue;
      }
      if (now >= f.deadline) {
        finish(f.index, f.connected ? ProbeOutcome::silent : ProbeOutcome::timed_out);
        close(f.fd);
        if (!f.connected) retry.push_back(f.index);
      } else {
        still.push_back(f);
      }
    }
    open = std::move(still);
    for (std::size_t i : retry) start(i);
  }
  return results;
}

}  // namespace safe
