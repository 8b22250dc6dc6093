// One etcd member of a test's or a benchmark's own (Debian's etcd-server), on free loopback ports
// in a directory of its own, killed and removed at the end.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

#include "controller/safed/etcd_client.hpp"
#include "tests/unit/loopback_listener.hpp"

namespace safe {

// A port free a moment ago (etcd binds it right after).
inline int free_port() { return testing::LoopbackListener(1).port; }

inline std::string find_etcd() {
  for (const char* dir : {"/usr/bin", "/usr/local/bin"}) {
    std::string p = std::string(dir) + "/etcd";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// One etcd member for the object's lifetime; `ready` once it answers.
class Etcd {
 public:
  Etcd() {
    std::string bin = find_etcd();
    if (bin.empty()) return;
    char tmpl[] = "/tmp/safe-etcd.XXXXXX";
    dir_ = mkdtemp(tmpl);
    url = "http://127.0.0.1:" + std::to_string(free_port());
    std::string peer = "http://127.0.0.1:" + std::to_string(free_port());
    pid_ = fork();
    if (pid_ == 0) {
      std::string log = dir_ + "/etcd.log";
      freopen(log.c_str(), "w", stderr);
      freopen(log.c_str(), "a", stdout);
      execl(bin.c_str(), "etcd", "--data-dir", (dir_ + "/data").c_str(), "--listen-client-urls", url.c_str(),
            "--advertise-client-urls", url.c_str(), "--listen-peer-urls", peer.c_str(), "--initial-advertise-peer-urls",
            peer.c_str(), "--initial-cluster", ("default=" + peer).c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    EtcdClient probe({{url}, 500});
    for (int i = 0; i < 100 && !ready; ++i) {
      ready = static_cast<bool>(probe.grant(2));
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ~Etcd() {
    if (pid_ > 0) {
      kill(pid_, SIGCONT);
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void stop() { kill(pid_, SIGSTOP); }   // etcd hung: requests time out
  void resume() { kill(pid_, SIGCONT); }
  std::string url;
  bool ready = false;

 private:
  std::string dir_;
  pid_t pid_ = -1;
};

}  // namespace safe
