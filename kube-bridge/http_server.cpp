#include "kube-bridge/http_server.hpp"

#include <httplib.h>

#include <chrono>
#include <cstdio>

namespace safe::bridge {
namespace {

// A path as the log shows it: clients may send anything, the log must stay one line per request.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) ? '?' : c;
  return s.size() > 200 ? out + "..." : out;
}

void log_request(const std::string& user, const std::string& method, const std::string& path, int status, double ms) {
  std::fprintf(stderr, "safe-kube-bridge: user=%s method=%s path=%s status=%d duration_ms=%.3f\n",
               user.empty() ? "-" : printable(user).c_str(), printable(method).c_str(), printable(path).c_str(), status, ms);
}

}  // namespace

bool split_listen_address(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  std::string p = listen.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos) return false;
  port = std::stoi(p);
  return port <= 65535;
}

struct HttpServer::Impl {
  HttpSettings settings;
  BridgeApi& api;
  std::unique_ptr<httplib::Server> server;
  int bound_port = 0;
};

HttpServer::HttpServer(HttpSettings settings, BridgeApi& api) : impl_(new Impl{std::move(settings), api, nullptr, 0}) {}
HttpServer::~HttpServer() = default;

bool HttpServer::bind(std::string& error) {
  auto& s = impl_->settings;
  if (!s.tls_cert.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(s.tls_cert.c_str(), s.tls_key.c_str());
    if (!tls->is_valid()) {
      error = "cannot use TLS certificate " + s.tls_cert + " / key " + s.tls_key +
              " (unreadable or not a matching PEM pair); fix kube_bridge.tls_cert and tls_key";
      return false;
    }
    impl_->server = std::move(tls);
  } else {
    impl_->server = std::make_unique<httplib::Server>();
  }
  httplib::Server& srv = *impl_->server;
  int threads = s.threads;
  srv.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm holds the
  // body until the client's delayed ACK, ~40 ms per keep-alive request (measured: 350 req/s).
  srv.set_tcp_nodelay(true);
  srv.set_keep_alive_max_count(100000);
  srv.set_keep_alive_timeout(30);
  srv.set_read_timeout(10);
  srv.set_write_timeout(10);
  srv.set_payload_max_length(s.max_body_bytes);

  BridgeApi& api = impl_->api;
  auto handler = [&api](const httplib::Request& req, httplib::Response& res) {
    auto t0 = std::chrono::steady_clock::now();
    ApiRequest in;
    in.method = req.method;
    in.path = req.path;
    for (const auto& [k, v] : req.params) in.query.emplace(k, v);
    in.authorization = req.get_header_value("Authorization");
    in.body = req.body;
    ApiResponse out;
    try {
      out = api.handle(in);
    } catch (const std::exception& e) {
      out = error_response(500, std::string("safe: internal error: ") + e.what() + "; please report it");
    }
    res.status = out.status;
    for (const auto& [k, v] : out.headers) res.set_header(k.c_str(), v);
    if (req.method != "HEAD") res.set_content(std::move(out.body), out.content_type.c_str());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    log_request(out.user, req.method, req.path, out.status, ms);
  };
  const char* all = R"(/.*)";
  srv.Get(all, handler);
  srv.Post(all, handler);
  srv.Put(all, handler);
  srv.Patch(all, handler);
  srv.Delete(all, handler);
  srv.Options(all, handler);
  // Errors httplib answers itself (413 body too large, 400 malformed request, 404 unknown
  // method): a JSON body like every other error, and a log line.
  srv.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty()) {
      std::string why = res.status == 413 ? "request body too large (kube_bridge.max_body_bytes)"
                                          : "bad request (HTTP " + std::to_string(res.status) + ")";
      res.set_content("{\"error\":\"" + why + "\"}", "application/json");
    }
    if (res.status == 413 || res.status == 400 || res.status == 414 || res.status == 431)
      log_request("-", req.method, req.path, res.status, 0);
  });
  srv.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    res.status = 500;
    res.set_content("{\"error\":\"safe: internal error; please report it\"}", "application/json");
  });
  if (s.port == 0) {
    impl_->bound_port = srv.bind_to_any_port(s.host);
    if (impl_->bound_port <= 0) return error = "cannot listen on " + s.host + " (any port)", false;
  } else {
    if (!srv.bind_to_port(s.host, s.port)) {
      error = "cannot listen on " + s.host + ":" + std::to_string(s.port) +
              " (address in use or not local); change kube_bridge.listen or --listen";
      return false;
    }
    impl_->bound_port = s.port;
  }
  return true;
}

int HttpServer::port() const { return impl_->bound_port; }
void HttpServer::run() { impl_->server->listen_after_bind(); }
void HttpServer::stop() {
  if (impl_->server) impl_->server->stop();
}

}  // namespace safe::bridge
