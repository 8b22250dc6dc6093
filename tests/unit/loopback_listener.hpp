// A listening TCP socket on a free loopback port: a stand-in for a slurmd in the probe tests and
// the reconcile benchmark. Nothing accepts on a LoopbackListener (a stopped slurmd: the kernel
// still completes handshakes); a ServingListener accepts every connection and closes it, as a
// live slurmd does with a connection that brings no message.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

namespace safe::testing {

struct LoopbackListener {
  int fd = -1;
  int port = 0;
  explicit LoopbackListener(int backlog) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    listen(fd, backlog);
  }
  ~LoopbackListener() { close(fd); }
  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;
};

struct ServingListener {
  LoopbackListener socket;
  std::atomic<bool> stop{false};
  std::thread thread{[this] {
    while (!stop) {
      int c = accept(socket.fd, nullptr, nullptr);
      if (c >= 0) close(c);
    }
  }};
  explicit ServingListener(int backlog) : socket(backlog) {}
  int port() const { return socket.port; }
  ~ServingListener() {
    stop = true;
    shutdown(socket.fd, SHUT_RDWR);  // wakes the accept
    thread.join();
  }
};

}  // namespace safe::testing
