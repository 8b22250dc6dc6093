#include "kube-bridge/http_server.hpp"

#include <chrono>
#include <cstdio>

#include "common/daemon_log.hpp"

namespace safe::bridge {
namespace {

// A path as the log shows it: clients may send anything, the log must stay one line per request.
std::string printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x21 || c == 0x7f) ? '?' : c;
  return s.size() > 200 ? out + "..." : out;
}

void log_request(const std::string& user, const HttpRequest& r, int status, double ms) {
  safe::log_linef(safe::LogPriority::info, "safe-kube-bridge: user=%s method=%s path=%s status=%d duration_ms=%.3f client=%s",
               user.empty() ? "-" : printable(user).c_str(), printable(r.method).c_str(), printable(r.path).c_str(),
               status, ms, printable(r.client).c_str());
}

}  // namespace

BridgeHttpServer::BridgeHttpServer(HttpServiceSettings settings, BridgeApi& api, BridgeMetrics& metrics)
    : service_(
          std::move(settings),
          [&api, &metrics](const HttpRequest& req) {
            auto t0 = std::chrono::steady_clock::now();
            ApiResponse out = api.handle(req);
            double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            if (req.path != "/healthz") {  // a probe's beat is no news
              log_request(out.user, req, out.status, ms);
              metrics.count_request(out.status, ms / 1000.0);
            }
            return HttpResponse{out.status, std::move(out.body), out.content_type, std::move(out.headers)};
          },
          [](const HttpRequest& req) { return req.path == "/healthz"; }) {}

Status BridgeHttpServer::start() { return service_.start(); }

}  // namespace safe::bridge
