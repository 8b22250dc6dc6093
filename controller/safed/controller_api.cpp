#include "controller/safed/controller_api.hpp"

#include <charconv>
#include <regex>

#include "common/json_value.hpp"

namespace safe {
namespace {

HttpResponse error(int status, const std::string& message) {
  Json body = json_take(json_object());
  json_set(body.get(), "error", json_str(message));
  return {status, json_text(body.get()) + "\n", "application/json", {}};
}

HttpResponse json_ok(std::string body) { return {200, std::move(body), "application/json", {}}; }

std::optional<long long> number(const std::string& text) {
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

HttpResponse ControllerApi::handle(const HttpRequest& req) const {
  bool get = req.method == "GET" || req.method == "HEAD";
  if (req.path == "/healthz") {
    if (!get) return error(405, "method not allowed; use GET");
    return json_ok("{\"status\":\"ok\"}\n");
  }
  if (req.path == "/metrics") {
    if (!get) return error(405, "method not allowed; use GET");
    return {200, data_.metrics(), "text/plain; version=0.0.4", {}};
  }
  if (req.path.rfind("/api/v1/", 0) != 0) return error(404, "safed: no such resource; the API lives under /api/v1");

  // A node's GPU grid comes as the munge credential that carries it: the credential proves who
  // sent that grid, and no other (one taken on its way can only deliver the same grid).
  static const std::regex gpus_path(R"(/api/v1/nodes/([A-Za-z0-9_.-]{1,255})/gpus)");
  std::smatch grid_path;
  if (std::regex_match(req.path, grid_path, gpus_path)) return put_node_gpus(req, grid_path[1]);

  AuthResult auth = auth_.authenticate(req.authorization);
  if (!auth.principal) {
    HttpResponse r = error(401, "safed: " + auth.error);
    r.headers.emplace_back("WWW-Authenticate", "Bearer, Munge");
    return r;
  }
  const Principal& who = *auth.principal;
  std::optional<std::uint32_t> only = who.admin ? std::nullopt : std::optional<std::uint32_t>(who.user.uid);
  static const std::regex job_path(R"(/api/v1/jobs/(\d{1,10}))");
  static const std::regex release_path(R"(/api/v1/nodes/([A-Za-z0-9_.-]{1,255})/release)");
  std::smatch m;
  if (req.path == "/api/v1/status") {
    if (!get) return error(405, "method not allowed; use GET");
    return json_ok(data_.status(only));
  }
  if (req.path == "/api/v1/jobs") {
    if (!get) return error(405, "method not allowed; use GET");
    return json_ok(data_.jobs(req.query.count("all") > 0, only));
  }
  if (req.path == "/api/v1/workspaces") {
    if (!get) return error(405, "method not allowed; use GET");
    return json_ok(data_.workspaces());
  }
  if (req.path == "/api/v1/ettr-history") {
    if (!get) return error(405, "method not allowed; use GET");
    long long since = 0, step = 86400;
    for (const auto& [key, value] : req.query) {
      auto n = number(value);
      if (key == "since" && n) since = *n;
      else if (key == "step" && n && *n >= 60) step = *n;
      else
        return error(422, "safed: ettr-history takes since (seconds since the epoch) and step (seconds, at least 60; "
                          "86400 when left out)");
    }
    return json_ok(data_.ettr_history(since, step));
  }
  if (req.path == "/api/v1/failovers" || req.path == "/api/v1/node-faults") {
    if (!get) return error(405, "method not allowed; use GET");
    long long since = 0;
    if (auto it = req.query.find("since"); it != req.query.end()) {
      auto n = number(it->second);
      if (!n) return error(422, "safed: since expects a non-negative integer (seconds since the epoch)");
      since = *n;
    }
    if (req.path == "/api/v1/failovers") return json_ok(data_.failovers(since, only));
    std::string node;
    if (auto it = req.query.find("node"); it != req.query.end()) {
      static const std::regex node_name(R"([A-Za-z0-9_.-]{1,255})");
      if (!std::regex_match(it->second, node_name)) return error(422, "safed: node expects a Slurm node name");
      node = it->second;
    }
    return json_ok(data_.node_faults(node, since));
  }
  if (std::regex_match(req.path, m, job_path)) {
    if (!get) return error(405, "method not allowed; use GET");
    auto id = number(m[1]);
    std::optional<long long> submitted;
    if (auto it = req.query.find("submitted"); it != req.query.end()) {
      submitted = number(it->second);
      if (!submitted) return error(422, "safed: submitted expects a non-negative integer (the job record's sub=)");
    }
    std::string body = id && *id <= 0xffffffffLL ? data_.job(static_cast<std::uint32_t>(*id), submitted, only) : "";
    // Another user's job reads as a missing one.
    if (body.empty()) return error(404, "safed: no SaFE job with that id visible to you in the state store");
    return json_ok(std::move(body));
  }
  if (req.path == "/api/v1/node-gpus") {
    if (!get) return error(405, "method not allowed; use GET");
    return json_ok(data_.node_gpus());
  }
  if (std::regex_match(req.path, m, release_path)) {
    if (req.method != "POST") return error(405, "method not allowed; use POST");
    if (!who.admin)
      return error(403, "safed: releasing a quarantined node is for administrators (auth.admins); user '" +
                            who.user.name + "' is not one");
    if (Status released = data_.release_node(m[1]); !released) return error(409, released.error());
    return json_ok("{\"released\": true}\n");
  }
  return error(404, "safed: no such resource; see docs/controller.md");
}

HttpResponse ControllerApi::put_node_gpus(const HttpRequest& req, const std::string& node) const {
  if (req.method != "POST") return error(405, "method not allowed; use POST");
  Authenticator::SignedPayload signed_grid = auth_.open_munge_payload(req.body);
  if (!signed_grid.who.principal) {
    HttpResponse r = error(401, "safed: " + signed_grid.who.error + "; a node's health checker sends its grid in a "
                                "munge credential (the request's body)");
    r.headers.emplace_back("WWW-Authenticate", "Munge");
    return r;
  }
  const Principal& who = *signed_grid.who.principal;
  if (!who.admin)
    return error(403, "safed: a node's GPU grid comes from its health checker, running as root (auth.admins); user '" +
                          who.user.name + "' is not an admin");
  auto report = parse_node_gpu_report(signed_grid.payload);
  if (!report) return error(422, "safed: not a GPU grid: " + report.error());
  if (report->node != node) return error(422, "safed: the grid is of node '" + report->node + "', not of '" + node + "'");
  Result<bool> kept = data_.put_node_gpus(*report);
  if (!kept) return error(404, kept.error());
  return json_ok(*kept ? "{\"kept\": true}\n" : "{\"kept\": false, \"why\": \"safed holds a grid of a later run\"}\n");
}

}  // namespace safe
