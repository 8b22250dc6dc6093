#include "common/systemd_notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/unique_fd.hpp"

namespace safe {

SystemdNotifier SystemdNotifier::from_environment(pid_t pid) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* for_pid = std::getenv("WATCHDOG_PID");
  std::optional<std::chrono::microseconds> watchdog;
  char* end = nullptr;
  long long us = usec ? std::strtoll(usec, &end, 10) : 0;
  bool ours = !for_pid || std::strtoll(for_pid, nullptr, 10) == pid;
  if (usec && end && *end == '\0' && us > 0 && ours) watchdog = std::chrono::microseconds(us);
  return SystemdNotifier(socket ? socket : "", watchdog);
}

Status SystemdNotifier::notify(const std::string& state) const {
  if (socket_.empty()) return ok_status();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_.size() >= sizeof addr.sun_path || (socket_[0] != '/' && socket_[0] != '@'))
    return Error{"NOTIFY_SOCKET " + socket_ + " is not a socket path"};
  std::memcpy(addr.sun_path, socket_.data(), socket_.size());
  if (socket_[0] == '@') addr.sun_path[0] = '\0';  // the abstract namespace
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + socket_.size());
  UniqueFd fd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd) return Error{std::string("cannot make a socket for systemd: ") + std::strerror(errno)};
  if (::sendto(fd.get(), state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len) < 0)
    return Error{"cannot notify systemd at " + socket_ + ": " + std::strerror(errno)};
  return ok_status();
}

std::size_t Heartbeats::add(std::string name, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  loops_.emplace_back(std::move(name), now);
  return loops_.size() - 1;
}

void Heartbeats::beat(std::size_t loop, Clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (loop < loops_.size()) loops_[loop].second = now;
}

std::vector<std::pair<std::string, long long>> Heartbeats::stalled(Clock::time_point now, Clock::duration limit) const {
  std::lock_guard lock(mutex_);
  std::vector<std::pair<std::string, long long>> out;
  for (const auto& [name, last] : loops_)
    if (now - last > limit) out.emplace_back(name, std::chrono::duration_cast<std::chrono::seconds>(now - last).count());
  return out;
}

}  // namespace safe
