#include "common/authenticator.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/base64.hpp"
#include "common/json_value.hpp"

namespace safe {
namespace {

constexpr const char* kGetToken = "; get one with: scontrol token lifespan=3600";

}  // namespace

JwtCheck verify_slurm_jwt(std::string_view token, std::string_view key, std::time_t now) {
  JwtCheck out;
  if (token.size() > 8192) return {std::nullopt, "token too long"};
  auto dot1 = token.find('.');
  auto dot2 = dot1 == token.npos ? token.npos : token.find('.', dot1 + 1);
  if (dot2 == token.npos || token.find('.', dot2 + 1) != token.npos)
    return {std::nullopt, std::string("not a JWT (expected three dot-separated parts)") + kGetToken};
  auto header = base64_decode(token.substr(0, dot1), Base64::url);
  auto payload = base64_decode(token.substr(dot1 + 1, dot2 - dot1 - 1), Base64::url);
  auto signature = base64_decode(token.substr(dot2 + 1), Base64::url);
  if (!header || !payload || !signature) return {std::nullopt, std::string("not a JWT (bad base64url)") + kGetToken};

  Json h = json_take(json_loadb(header->data(), header->size(), JSON_REJECT_DUPLICATES, nullptr));
  // Only HS256: accepting the token's own choice of algorithm ("none") would skip verification.
  if (!h || json_string_or(h.get(), "alg") != "HS256")
    return {std::nullopt, "unsupported JWT: only HS256 tokens from Slurm's auth/jwt are accepted"};

  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned mac_len = 0;
  std::string_view signed_part = token.substr(0, dot2);
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(signed_part.data()),
            signed_part.size(), mac, &mac_len) ||
      mac_len != signature->size() || CRYPTO_memcmp(mac, signature->data(), mac_len) != 0)
    return {std::nullopt, std::string("JWT signature does not verify with this cluster's key") + kGetToken};

  Json claims = json_take(json_loadb(payload->data(), payload->size(), JSON_REJECT_DUPLICATES, nullptr));
  if (!claims || !json_is_object(claims.get())) return {std::nullopt, "JWT claims are not a JSON object"};
  const json_t* exp = json_object_get(claims.get(), "exp");
  if (!json_is_integer(exp)) return {std::nullopt, std::string("JWT has no exp claim") + kGetToken};
  if (json_integer_value(exp) <= now) return {std::nullopt, std::string("JWT expired") + kGetToken};
  std::string user = json_string_or(claims.get(), "sun");
  if (user.empty()) return {std::nullopt, "JWT has no sun (user name) claim; tokens from scontrol token carry one"};
  out.user = user;
  return out;
}

AuthSettings auth_settings_from(const AuthConfig& config) {
  AuthSettings s;
  s.munge = config.munge;
  s.admins = config.admins;
  return s;
}

Result<std::string> read_jwt_key(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return Error{"cannot read JWT key " + path + ": " + std::strerror(errno)};
  if (st.st_mode & 0077)
    return Error{"JWT key " + path + " is readable by group or others; chmod 600 it (as Slurm requires)"};
  std::ifstream in(path, std::ios::binary);
  std::string key(std::istreambuf_iterator<char>(in), {});
  if (key.empty()) return Error{"JWT key " + path + " is empty; use the key of Slurm's AuthAltParameters=jwt_key="};
  return key;
}

AuthResult Authenticator::for_user(std::optional<UserRecord> user, const std::string& method, const std::string& who) const {
  if (!user) return {std::nullopt, "the credential names user " + who + ", who is unknown on this host"};
  Principal p{*user, std::find(settings_.admins.begin(), settings_.admins.end(), user->name) != settings_.admins.end(), method};
  return {p, ""};
}

AuthResult Authenticator::authenticate(std::string_view authorization) const {
  const std::string how = "send 'Authorization: Bearer <token from scontrol token>' or 'Authorization: Munge <munge -n>'";
  if (authorization.empty()) return {std::nullopt, "authentication required; " + how};
  auto space = authorization.find(' ');
  std::string scheme(authorization.substr(0, space));
  std::string_view value = space == authorization.npos ? "" : authorization.substr(space + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  std::transform(scheme.begin(), scheme.end(), scheme.begin(), [](unsigned char c) { return std::tolower(c); });
  if (scheme == "bearer") {
    if (settings_.jwt_key.empty())
      return {std::nullopt, "JWT authentication is not enabled here (auth.jwt_key_file); use munge"};
    JwtCheck check = verify_slurm_jwt(value, settings_.jwt_key, clock_());
    if (!check.user) return {std::nullopt, check.error};
    return for_user(users_->by_name(*check.user), "jwt", "'" + check.user->substr(0, 64) + "'");
  }
  if (scheme == "munge") {
    if (!settings_.munge || !munge_)
      return {std::nullopt, "munge authentication is not enabled here (auth.munge); use a JWT"};
    if (value.empty() || value.size() > 8192) return {std::nullopt, "empty or oversized munge credential; " + how};
    auto decoded = munge_->decode(std::string(value));
    if (!decoded.uid) return {std::nullopt, "munge credential rejected: " + decoded.error + "; make a fresh one with munge -n"};
    // A credential that carries a payload was made to deliver that payload (a node's GPU grid),
    // not to act as its maker: one taken on its way must not open every other route.
    if (!decoded.payload.empty())
      return {std::nullopt, "munge credential refused: it carries a payload; make one without, with munge -n"};
    return for_user(users_->by_uid(*decoded.uid), "munge", "uid " + std::to_string(*decoded.uid));
  }
  return {std::nullopt, "unsupported authorization scheme; " + how};
}

Authenticator::SignedPayload Authenticator::open_munge_payload(std::string_view credential) const {
  if (!settings_.munge || !munge_) return {{std::nullopt, "munge authentication is not enabled here (auth.munge)"}, ""};
  while (!credential.empty() && std::isspace(static_cast<unsigned char>(credential.back()))) credential.remove_suffix(1);
  if (credential.empty()) return {{std::nullopt, "the body must be a munge credential carrying the request"}, ""};
  auto decoded = munge_->decode(std::string(credential));
  if (!decoded.uid) return {{std::nullopt, "munge credential rejected: " + decoded.error}, ""};
  return {for_user(users_->by_uid(*decoded.uid), "munge", "uid " + std::to_string(*decoded.uid)), std::move(decoded.payload)};
}

}  // namespace safe
