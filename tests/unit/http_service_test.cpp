// HttpService on a real loopback socket: idle and slow clients hold no worker, the limits close
// what they must, and oversized bodies are refused before they are read.
#include "common/http_service.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace safe {
namespace {

int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes or `timeout` passes.
std::string read_all(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  auto until = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (poll(&p, 1, static_cast<int>(std::max<long long>(1, left.count()))) <= 0) continue;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.find("\r\n\r\n") != std::string::npos && out.find("Content-Length: ") != std::string::npos) {
      auto body_at = out.find("\r\n\r\n") + 4;
      auto len = std::stoul(out.substr(out.find("Content-Length: ") + 16));
      if (out.size() >= body_at + len) break;
    }
  }
  return out;
}

// True when the server closed the connection within `timeout`.
bool closed_by_server(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
  char c;
  return read(fd, &c, 1) == 0;
}

std::string get(int port, const std::string& path, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  int fd = connect_to(port);
  if (fd < 0) return "";
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out = read_all(fd, timeout);
  close(fd);
  return out;
}

class HttpServiceTest : public ::testing::Test {
 protected:
  void start(HttpLimits limits) {
    HttpServiceSettings s;
    s.host = "127.0.0.1";
    s.port = 0;
    s.limits = limits;
    service = std::make_unique<HttpService>(
        s,
        [this](const HttpRequest& r) {
          if (r.path == "/slow") {
            ++slow_running;
            while (!release_slow) std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
          return HttpResponse{200, "{\"path\":\"" + r.path + "\",\"body\":" + std::to_string(r.body.size()) + "}",
                              "application/json", {}};
        },
        [](const HttpRequest& r) { return r.path == "/healthz"; });
    auto started = service->start();
    ASSERT_TRUE(started.ok()) << started.error();
    port = service->port();
  }
  ~HttpServiceTest() override {
    release_slow = true;
    for (int fd : fds) close(fd);
    if (service) service->stop();
  }
  std::unique_ptr<HttpService> service;
  int port = 0;
  std::vector<int> fds;
  std::atomic<bool> release_slow{false};
  std::atomic<int> slow_running{0};
};

TEST_F(HttpServiceTest, IdleConnectionsHoldNoWorker) {
  HttpLimits l;
  l.workers = 2;
  l.max_connections_per_client = 1000;
  start(l);
  for (int i = 0; i < 200; ++i) {
    int fd = connect_to(port);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
  }
  // 200 idle connections, 2 workers: a request still gets one (a thread per connection would wait
  // for an idle one to time out first).
  std::string r = get(port, "/api/x", std::chrono::seconds(3));
  EXPECT_NE(std::string::npos, r.find("200 OK")) << r;
  EXPECT_NE(std::string::npos, r.find("\"path\":\"/api/x\"")) << r;
}

TEST_F(HttpServiceTest, HealthzIsAnsweredWhileEveryWorkerIsBusy) {
  HttpLimits l;
  l.workers = 1;
  start(l);
  std::thread slow([&] { get(port, "/slow", std::chrono::seconds(10)); });
  while (slow_running == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::string r = get(port, "/healthz", std::chrono::seconds(3));
  EXPECT_NE(std::string::npos, r.find("200 OK")) << r;
  release_slow = true;
  slow.join();
}

TEST_F(HttpServiceTest, AClientOverItsConnectionLimitIsRefused) {
  HttpLimits l;
  l.max_connections_per_client = 4;
  start(l);
  for (int i = 0; i < 4; ++i) fds.push_back(connect_to(port));
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  fds.push_back(fd);
  EXPECT_TRUE(closed_by_server(fd, std::chrono::seconds(3))) << "the fifth connection from one address";
}

TEST_F(HttpServiceTest, AConnectionThatSendsNoRequestIsClosedAfterTheFirstRequestTimeout) {
  HttpLimits l;
  l.first_request_timeout_s = 1;
  l.idle_timeout_s = 30;
  start(l);
  int fd = connect_to(port);
  fds.push_back(fd);
  EXPECT_TRUE(closed_by_server(fd, std::chrono::seconds(5)));
}

TEST_F(HttpServiceTest, ABodyOverTheLimitIsRefusedBeforeItIsRead) {
  HttpLimits l;
  l.max_body_bytes = 1000;
  start(l);
  int fd = connect_to(port);
  fds.push_back(fd);
  std::string req = "POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Length: 536870912\r\nExpect: 100-continue\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string r = read_all(fd, std::chrono::seconds(3));
  EXPECT_NE(std::string::npos, r.find("413")) << r;
  EXPECT_EQ(std::string::npos, r.find("100 Continue")) << "the body is never asked for";
}

TEST_F(HttpServiceTest, ABodyWithinTheLimitReachesTheHandler) {
  start({});
  int fd = connect_to(port);
  fds.push_back(fd);
  std::string body(5000, 'x');
  std::string req = "POST /api/x HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\nConnection: close\r\n\r\n" + body;
  (void)!write(fd, req.data(), req.size());
  std::string r = read_all(fd, std::chrono::seconds(3));
  EXPECT_NE(std::string::npos, r.find("\"body\":5000")) << r;
}

TEST_F(HttpServiceTest, AKeptAliveConnectionIsClosedAfterItsLastRequest) {
  HttpLimits l;
  l.max_requests_per_connection = 2;
  start(l);
  int fd = connect_to(port);
  fds.push_back(fd);
  std::string req = "GET /api/a HTTP/1.1\r\nHost: x\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string first = read_all(fd, std::chrono::seconds(3));
  EXPECT_EQ(std::string::npos, first.find("Connection: close")) << first;
  (void)!write(fd, req.data(), req.size());
  std::string second = read_all(fd, std::chrono::seconds(3));
  EXPECT_NE(std::string::npos, second.find("Connection: close")) << second;
  EXPECT_TRUE(closed_by_server(fd, std::chrono::seconds(3)));
}

TEST_F(HttpServiceTest, EscapesAreDecodedButANulNeverCutsThePathShort) {
  start({});
  // A decoded %00 would end the C string: "/api/w/%00" would reach the handler as "/api/w/".
  std::string r = get(port, "/api/w%2Dx/%00");
  EXPECT_NE(std::string::npos, r.find("\"path\":\"/api/w-x/%00\"")) << r;
}

TEST(HttpListenAddress, Splits) {
  std::string host;
  int port = 0;
  EXPECT_TRUE(split_listen_address("127.0.0.1:9820", host, port));
  EXPECT_EQ("127.0.0.1", host);
  EXPECT_EQ(9820, port);
  EXPECT_TRUE(split_listen_address("[::1]:80", host, port));
  EXPECT_EQ("::1", host);
  EXPECT_FALSE(split_listen_address("nohost", host, port));
  EXPECT_FALSE(split_listen_address("h:99999", host, port));
}

}  // namespace
}  // namespace safe
