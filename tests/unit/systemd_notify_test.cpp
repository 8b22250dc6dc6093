// systemd's notifications over a real AF_UNIX datagram socket (as systemd's own, by path and in
// the abstract namespace), the watchdog's settings from the environment, and the heartbeats that
// decide whether a daemon pings.
#include "common/systemd_notify.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace safe {
namespace {

// A datagram socket standing in for systemd's notification socket.
class NotifySocket {
 public:
  explicit NotifySocket(std::string name) : name_(std::move(name)) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, name_.data(), name_.size());
    if (name_[0] == '@') addr.sun_path[0] = '\0';
    bound_ = bind(fd_, reinterpret_cast<sockaddr*>(&addr),
                  static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size())) == 0;
    timeval tv{2, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~NotifySocket() {
    close(fd_);
    if (name_[0] == '/') unlink(name_.c_str());
  }
  std::string receive() {
    char buf[256];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  }
  bool bound_ = false;

 private:
  std::string name_;
  int fd_ = -1;
};

TEST(SystemdNotifier, SendsEachStateAsOneDatagramByPathAndInTheAbstractNamespace) {
  for (std::string name : {"/tmp/safe-notify-" + std::to_string(getpid()), "@safe-notify-" + std::to_string(getpid())}) {
    NotifySocket systemd(name);
    ASSERT_TRUE(systemd.bound_) << name;
    SystemdNotifier notifier(name, std::nullopt);
    ASSERT_TRUE(notifier.enabled());
    ASSERT_TRUE(notifier.notify("READY=1"));
    EXPECT_EQ("READY=1", systemd.receive()) << name;
    ASSERT_TRUE(notifier.notify("WATCHDOG=1"));
    EXPECT_EQ("WATCHDOG=1", systemd.receive()) << name;
  }
}

TEST(SystemdNotifier, DoesNothingWithoutASocketAndSaysWhyItCannotSend) {
  SystemdNotifier none("", std::nullopt);
  EXPECT_FALSE(none.enabled());
  EXPECT_TRUE(none.notify("READY=1"));
  Status gone = SystemdNotifier("/tmp/safe-notify-nobody-listens", std::nullopt).notify("READY=1");
  ASSERT_FALSE(gone);
  EXPECT_NE(std::string::npos, gone.error().find("cannot notify systemd")) << gone.error();
  EXPECT_FALSE(SystemdNotifier("relative/path", std::nullopt).notify("READY=1"));
}

// The test's own environment, as it was, again at the end.
class SystemdEnvironment : public ::testing::Test {
 protected:
  SystemdEnvironment() {
    for (const char* name : names_)
      if (const char* v = std::getenv(name)) saved_.emplace_back(name, v);
  }
  ~SystemdEnvironment() override {
    for (const char* name : names_) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  static constexpr const char* names_[] = {"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"};
  std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(SystemdEnvironment, TheWatchdogIsThisProcesssOnlyWhenSystemdNamesIt) {
  setenv("NOTIFY_SOCKET", "/run/systemd/notify", 1);
  setenv("WATCHDOG_USEC", "120000000", 1);
  unsetenv("WATCHDOG_PID");
  auto n = SystemdNotifier::from_environment(4242);
  EXPECT_TRUE(n.enabled());
  ASSERT_TRUE(n.watchdog().has_value());
  EXPECT_EQ(std::chrono::seconds(120), *n.watchdog());
  setenv("WATCHDOG_PID", "4242", 1);
  EXPECT_TRUE(SystemdNotifier::from_environment(4242).watchdog().has_value());
  EXPECT_FALSE(SystemdNotifier::from_environment(4243).watchdog().has_value()) << "a parent's watchdog";
  setenv("WATCHDOG_USEC", "soon", 1);
  EXPECT_FALSE(SystemdNotifier::from_environment(4242).watchdog().has_value());
  unsetenv("NOTIFY_SOCKET");
  unsetenv("WATCHDOG_USEC");
  unsetenv("WATCHDOG_PID");
  EXPECT_FALSE(SystemdNotifier::from_environment(4242).enabled());
}

TEST(Heartbeats, ALoopThatStopsTurningStopsThePings) {
  using namespace std::chrono_literals;
  Heartbeats beats;
  auto t0 = Heartbeats::Clock::time_point{} + 1000s;
  auto main_loop = beats.add("main loop", t0);
  auto probes = beats.add("probe loop", t0);
  EXPECT_TRUE(beats.stalled(t0 + 100s, 120s).empty());
  beats.beat(main_loop, t0 + 100s);
  beats.beat(probes, t0 + 110s);
  EXPECT_TRUE(beats.stalled(t0 + 200s, 120s).empty());
  beats.beat(probes, t0 + 200s);  // the main loop hangs from t0 + 100 s
  auto stalled = beats.stalled(t0 + 221s, 120s);
  ASSERT_EQ(1u, stalled.size());
  EXPECT_EQ("main loop", stalled[0].first);
  EXPECT_EQ(121, stalled[0].second);
  beats.beat(main_loop, t0 + 222s);
  EXPECT_TRUE(beats.stalled(t0 + 222s, 120s).empty()) << "it turns again: the pings go on";
}

}  // namespace
}  // namespace safe
