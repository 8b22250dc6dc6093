// The HTTP(S) front of the bridge: cpp-httplib with keep-alive and an optional TLS certificate,
// handing every request to BridgeApi and logging it (user, method, path, status, duration).
#pragma once

#include <memory>
#include <string>

#include "kube-bridge/bridge_api.hpp"

namespace safe::bridge {

struct HttpSettings {
  std::string host = "127.0.0.1";
  int port = 9820;
  std::string tls_cert, tls_key;  // both or neither
  std::size_t max_body_bytes = 1 << 20;
  int threads = 32;  // each keep-alive connection holds a thread while it is open
};

class HttpServer {
 public:
  HttpServer(HttpSettings settings, BridgeApi& api);
  ~HttpServer();
  // Binds; false (with `error` set) when the address is taken or TLS files are unusable.
  bool bind(std::string& error);
  int port() const;
  void run();   // serves until stop()
  void stop();  // from any thread

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// "127.0.0.1:9820" -> host, port; false if malformed.
bool split_listen_address(const std::string& listen, std::string& host, int& port);

}  // namespace safe::bridge
