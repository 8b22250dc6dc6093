// The web console's session (docs/console.md): the browser signs in with a token from `scontrol
// token` (Slurm's own JWT; a browser cannot make munge credentials), which the bridge keeps in a
// cookie the page's scripts cannot read (HttpOnly), the browser sends only to requests from the
// bridge's own pages (SameSite=Strict), and only over HTTPS when the bridge serves HTTPS (Secure).
// Every state-changing request made with the cookie must also carry the session's CSRF token in
// X-CSRF-Token: an HMAC of the session under a key that lives only in this bridge process, which
// the console reads from GET /console/session (a response other sites' pages cannot read).
// The token in the cookie is verified on every request like a Bearer token: expiry included.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace safe::bridge {

inline constexpr std::string_view kSessionCookie = "safe_session";

class ConsoleSessions {
 public:
  // A fresh random key (a bridge restart invalidates the CSRF tokens, not the sessions).
  ConsoleSessions();
  explicit ConsoleSessions(std::string_view key);  // tests

  // The session token in a Cookie header, if it names one.
  static std::optional<std::string> token_of(std::string_view cookie_header);
  // The Set-Cookie value that starts a session with `token`, and the one that ends it.
  static std::string set_cookie(std::string_view token, bool secure);
  static std::string clear_cookie(bool secure);
  // A JWT as `scontrol token` prints it (SLURM_JWT=... or the bare token) is three base64url
  // parts; anything else (a cookie delimiter, a newline) is refused before it reaches a header.
  static std::optional<std::string> parse_token(std::string_view input);

  std::string csrf_token(std::string_view session_token) const;
  bool csrf_matches(std::string_view session_token, std::string_view presented) const;

 private:
  std::array<unsigned char, 32> key_{};
};

// Methods that change state: they need the CSRF token when authenticated by the cookie.
bool changes_state(std::string_view method);

}  // namespace safe::bridge
