#include "kube-bridge/console_session.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

namespace safe::bridge {

ConsoleSessions::ConsoleSessions() {
  if (RAND_bytes(key_.data(), static_cast<int>(key_.size())) != 1)
    throw std::runtime_error("cannot draw the console's CSRF key (OpenSSL RAND_bytes failed)");
}

ConsoleSessions::ConsoleSessions(std::string_view key) {
  std::copy_n(key.begin(), std::min(key.size(), key_.size()), key_.begin());
}

std::optional<std::string> ConsoleSessions::token_of(std::string_view header) {
  // "a=1; safe_session=xyz; b=2": the first cookie of that name.
  while (!header.empty()) {
    std::size_t end = header.find(';');
    std::string_view pair = header.substr(0, end);
    header = end == std::string_view::npos ? std::string_view{} : header.substr(end + 1);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    if (pair.size() > kSessionCookie.size() && pair.starts_with(kSessionCookie) && pair[kSessionCookie.size()] == '=')
      return parse_token(pair.substr(kSessionCookie.size() + 1));
  }
  return std::nullopt;
}

std::optional<std::string> ConsoleSessions::parse_token(std::string_view input) {
  while (!input.empty() && (input.front() == ' ' || input.front() == '\t')) input.remove_prefix(1);
  while (!input.empty() && (input.back() == ' ' || input.back() == '\t' || input.back() == '\n' || input.back() == '\r'))
    input.remove_suffix(1);
  if (input.starts_with("SLURM_JWT=")) input.remove_prefix(10);
  if (input.empty() || input.size() > 8192) return std::nullopt;
  int dots = 0;
  for (char c : input) {
    if (c == '.') ++dots;
    else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return std::nullopt;
  }
  if (dots != 2) return std::nullopt;
  return std::string(input);
}

std::string ConsoleSessions::set_cookie(std::string_view token, bool secure) {
  return std::string(kSessionCookie) + "=" + std::string(token) + "; Path=/; HttpOnly; SameSite=Strict" +
         (secure ? "; Secure" : "");
}

std::string ConsoleSessions::clear_cookie(bool secure) {
  return std::string(kSessionCookie) + "=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "");
}

std::string ConsoleSessions::csrf_token(std::string_view session_token) const {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), key_.data(), static_cast<int>(key_.size()), reinterpret_cast<const unsigned char*>(session_token.data()),
       session_token.size(), mac, &mac_len);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned i = 0; i < mac_len; ++i) {
    hex += kHex[mac[i] >> 4];
    hex += kHex[mac[i] & 15];
  }
  return hex;
}

bool ConsoleSessions::csrf_matches(std::string_view session_token, std::string_view presented) const {
  std::string expected = csrf_token(session_token);
  return presented.size() == expected.size() && CRYPTO_memcmp(expected.data(), presented.data(), expected.size()) == 0;
}

bool changes_state(std::string_view method) { return method != "GET" && method != "HEAD" && method != "OPTIONS"; }

}  // namespace safe::bridge
