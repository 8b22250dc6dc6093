// The web console's side of the bridge (docs/console.md): its files under /console/, its session
// (/console/session: sign in with a Slurm JWT, read the CSRF token, sign out), and the console's
// cookie as a credential for /api/v1, where a state-changing request also needs the CSRF token.
#include "common/json_value.hpp"
#include "kube-bridge/bridge_api.hpp"
#include "kube-bridge/console_assets.hpp"

namespace safe::bridge {
namespace {

// Served with every console file: nothing but the bridge's own scripts and styles run, the page
// is never framed, and the browser trusts no content type but the one given.
void add_page_headers(ApiResponse& r) {
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
                         "base-uri 'none'; form-action 'self'; frame-ancestors 'none'");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  r.headers.emplace_back("Referrer-Policy", "no-referrer");
  r.headers.emplace_back("Cache-Control", "no-store");
}

// The console's session cookie of a request, and who it authenticates (no principal: none, or ended).
struct CookieSession {
  std::optional<std::string> token;
  AuthResult auth;
};
CookieSession cookie_session(const ApiRequest& request, const Authenticator& auth) {
  CookieSession s{ConsoleSessions::token_of(request.cookie), {}};
  if (s.token) s.auth = auth.authenticate("Bearer " + *s.token);
  return s;
}

ApiResponse session_body(const std::string& user, bool admin, const std::string& csrf) {
  Json body = json_take(json_object());
  json_set(body.get(), "user", json_str(user));
  json_set(body.get(), "admin", json_boolean(admin));
  json_set(body.get(), "csrf", json_str(csrf));
  ApiResponse r = json_response(200, body.get());
  r.headers.emplace_back("Cache-Control", "no-store");
  r.user = user;
  return r;
}

}  // namespace

std::variant<Principal, ApiResponse> BridgeApi::requester(const ApiRequest& request) {
  std::optional<std::string> session;
  if (request.authorization.empty()) session = ConsoleSessions::token_of(request.cookie);
  AuthResult auth = auth_.authenticate(session ? "Bearer " + *session : request.authorization);
  if (!auth.principal) {
    metrics_.count_auth_failure();
    ApiResponse r = error_response(401, session ? "the console's session has ended (" + auth.error + "); sign in again"
                                                : auth.error);
    r.headers.emplace_back("WWW-Authenticate", "Bearer, Munge");
    r.user = "-";
    return r;
  }
  // A cookie comes with every request the browser makes to the bridge; the CSRF token only with
  // those the console's own script makes.
  if (session && changes_state(request.method) && !sessions_.csrf_matches(*session, request.csrf_token)) {
    ApiResponse r = error_response(403, "this request changes state and came without the console's CSRF token "
                                        "(X-CSRF-Token from GET /console/session); use the console, or send the "
                                        "token in an Authorization header instead of the cookie");
    r.user = auth.principal->user.name;
    return r;
  }
  return *auth.principal;
}

ApiResponse BridgeApi::console(const ApiRequest& request, const std::vector<std::string>& parts) {
  if (parts.size() == 2 && parts[1] == "session") return console_session(request);
  // /console/ itself and its files; anything else is not found.
  std::string name = parts.size() == 2 ? parts[1] : "";
  ConsoleAsset asset = parts.size() <= 2 ? console_asset(name) : ConsoleAsset{};
  if (parts.size() == 1 && request.path != "/console/") {
    ApiResponse r{308, "", "text/plain", {{"Location", "/console/"}}, "-"};
    return r;
  }
  if (!asset.body) {
    ApiResponse r = error_response(404, "no such console page; the console is at /console/");
    r.user = "-";
    return r;
  }
  if (request.method != "GET" && request.method != "HEAD") {
    ApiResponse r = error_response(405, "method not allowed here; allowed: GET");
    r.headers.emplace_back("Allow", "GET");
    r.user = "-";
    return r;
  }
  ApiResponse r{200, *asset.body, std::string(asset.content_type), {}, "-"};
  add_page_headers(r);
  return r;
}

ApiResponse BridgeApi::console_session(const ApiRequest& request) {
  if (request.method == "POST") {
    // Sign-in: no other site's page can send a request with this header (a form cannot, and a
    // script would need CORS, which the bridge never grants), so no one signs a browser in to
    // their own account behind its user's back.
    if (request.csrf_token.empty()) return error_response(403, "sign in through the console (the X-CSRF-Token header is missing)");
    json_error_t err;
    Json body = json_take(json_loadb(request.body.data(), request.body.size(), 0, &err));
    const json_t* given = json_is_object(body.get()) ? json_object_get(body.get(), "token") : nullptr;
    std::optional<std::string> token =
        json_is_string(given) ? ConsoleSessions::parse_token(json_string_value(given)) : std::nullopt;
    if (!token)
      return error_response(400, "expected {\"token\": \"...\"} with the token `scontrol token lifespan=3600` prints");
    AuthResult auth = auth_.authenticate("Bearer " + *token);
    if (!auth.principal) {
      metrics_.count_auth_failure();
      ApiResponse r = error_response(401, auth.error);
      r.user = "-";
      return r;
    }
    ApiResponse r = session_body(auth.principal->user.name, auth.principal->admin, sessions_.csrf_token(*token));
    r.headers.emplace_back("Set-Cookie", ConsoleSessions::set_cookie(*token, request.tls));
    return r;
  }
  if (request.method == "GET") {
    auto [token, auth] = cookie_session(request, auth_);
    if (!auth.principal) {
      ApiResponse r = error_response(401, token ? "the session has ended (" + auth.error + "); sign in again" : "not signed in");
      r.user = "-";
      return r;
    }
    return session_body(auth.principal->user.name, auth.principal->admin, sessions_.csrf_token(*token));
  }
  if (request.method == "DELETE") {
    // Sign-out: a live session needs its CSRF token; an ended one is only cleared.
    auto [token, auth] = cookie_session(request, auth_);
    if (auth.principal && !sessions_.csrf_matches(*token, request.csrf_token))
      return error_response(403, "signing out needs the console's CSRF token (X-CSRF-Token)");
    ApiResponse r{204, "", "application/json", {{"Set-Cookie", ConsoleSessions::clear_cookie(request.tls)}},
                  auth.principal ? auth.principal->user.name : "-"};
    return r;
  }
  ApiResponse r = error_response(405, "method not allowed here; allowed: GET, POST, DELETE");
  r.headers.emplace_back("Allow", "GET, POST, DELETE");
  r.user = "-";
  return r;
}

}  // namespace safe::bridge
