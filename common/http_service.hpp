// The HTTP(S) front of SaFE's network services (safed's API, the REST bridge): libmicrohttpd
// with an epoll event thread that holds every connection, and a pool of workers that runs the
// handler for complete requests only. So an idle or slow client costs a file descriptor and a
// little memory, never a thread: 1,000 idle connections do not keep /healthz from answering.
//
// The limits an unauthenticated client meets before any handler runs:
//   - connections in all, and per client address;
//   - a short deadline for the first request on a connection, a longer idle timeout between
//     requests of a kept-alive one, and a number of requests after which it is closed;
//   - request headers of at most `max_header_bytes`, bodies of at most `max_body_bytes`
//     (413 before the body is read when Content-Length says so).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.hpp"

namespace safe {

struct HttpRequest {
  std::string method;
  std::string path;  // decoded, without the query
  std::multimap<std::string, std::string> query;
  std::string authorization;
  std::string body;
  std::string client;  // the peer's address
  std::string cookie{};      // the Cookie header (the console's session)
  std::string csrf_token{};  // the X-CSRF-Token header (the console's state-changing requests)
  bool tls = false;          // came over HTTPS (the session cookie is then Secure)
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpLimits {
  std::size_t max_body_bytes = 1 << 20;
  std::size_t max_header_bytes = 32 << 10;
  unsigned max_connections = 4096;
  unsigned max_connections_per_client = 64;
  unsigned first_request_timeout_s = 10;
  unsigned idle_timeout_s = 30;
  unsigned max_requests_per_connection = 1000;
  unsigned workers = 16;
};

struct HttpServiceSettings {
  std::string host;  // an address to bind ("127.0.0.1", "::1", "0.0.0.0")
  int port = 0;      // 0: any free port (port() tells which)
  std::string tls_cert, tls_key;  // PEM files; both or neither
  HttpLimits limits;
};

class HttpService {
 public:
  using Handler = std::function<HttpResponse(const HttpRequest&)>;
  // `handler` runs on a worker for every request, except those `inline_route` accepts: those are
  // answered on the event thread itself, and must be cheap and never block (/healthz).
  HttpService(HttpServiceSettings settings, Handler handler, std::function<bool(const HttpRequest&)> inline_route);
  ~HttpService();
  HttpService(const HttpService&) = delete;
  HttpService& operator=(const HttpService&) = delete;

  // Binds and starts serving; the error says what to change (address in use, bad certificate).
  Status start();
  int port() const;
  // Stops accepting, finishes the requests in hand, joins the workers. Idempotent.
  void stop();

  struct Stats {
    long long requests = 0;
  };
  Stats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Raises this process's soft limit of open files to its hard limit: every connection of a service
// is a descriptor, and idle clients must not run a daemon out of them at the default 1024.
void raise_open_file_limit();

// "HOST:PORT" or "[V6]:PORT" into its parts; false when malformed.
bool split_listen_address(const std::string& listen, std::string& host, int& port);

}  // namespace safe
