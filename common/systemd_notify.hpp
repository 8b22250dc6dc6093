// systemd's service notifications (the sd_notify(3) protocol, without libsystemd: one datagram to
// the AF_UNIX socket named in $NOTIFY_SOCKET): READY=1 once a daemon serves, STOPPING=1 when it
// stops, and WATCHDOG=1 pings, which a unit's WatchdogSec= expects, or systemd kills and restarts
// the daemon. A daemon pings only while every loop it watches has run recently (Heartbeats): a
// hung loop stops the pings, and a hung daemon is restarted.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.hpp"

namespace safe {

class SystemdNotifier {
 public:
  // From the environment systemd gives a service: $NOTIFY_SOCKET (a path, or '@' and an abstract
  // name), $WATCHDOG_USEC and $WATCHDOG_PID (the watchdog is this process's only when it names
  // `pid`). Without $NOTIFY_SOCKET (not under systemd, or Type=simple) every call does nothing.
  static SystemdNotifier from_environment(pid_t pid);
  SystemdNotifier(std::string socket, std::optional<std::chrono::microseconds> watchdog)
      : socket_(std::move(socket)), watchdog_(watchdog) {}

  bool enabled() const { return !socket_.empty(); }
  // WatchdogSec= as systemd passed it; nullopt: no watchdog for this process.
  std::optional<std::chrono::microseconds> watchdog() const { return watchdog_; }
  // Sends `state` ("READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS=..."); ok when disabled.
  Status notify(const std::string& state) const;

 private:
  std::string socket_;
  std::optional<std::chrono::microseconds> watchdog_;
};

// The loops a daemon's watchdog pings stand for: each beats once per turn; the daemon is alive
// while every one has beaten within `limit`. Thread-safe.
class Heartbeats {
 public:
  using Clock = std::chrono::steady_clock;
  // A loop to watch, alive from `now`; returns its number for beat().
  std::size_t add(std::string name, Clock::time_point now);
  void beat(std::size_t loop, Clock::time_point now);
  // The loops that have not beaten within `limit` of `now`, with the whole seconds since their
  // last beat; empty while all are alive.
  std::vector<std::pair<std::string, long long>> stalled(Clock::time_point now, Clock::duration limit) const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::pair<std::string, Clock::time_point>> loops_;
};

}  // namespace safe
