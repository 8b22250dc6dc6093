// Tokens as `scontrol token` makes them (auth/jwt: HS256, claims exp, iat, sun), for tests of
// the bridge's authentication and the console's sessions.
#pragma once

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <string>

namespace safe::testing {

inline std::string b64url(const std::string& in) {
  static const char* abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  unsigned buf = 0;
  int bits = 0;
  for (unsigned char c : in) {
    buf = (buf << 8) | c;
    bits += 8;
    while (bits >= 6) out += abc[(buf >> (bits -= 6)) & 63];
  }
  if (bits) out += abc[(buf << (6 - bits)) & 63];
  return out;
}

// A token as `scontrol token` makes it (auth/jwt: HS256, claims exp, iat, sun).
inline std::string make_token(const std::string& key, const std::string& claims, const std::string& header = R"({"alg":"HS256","typ":"JWT"})") {
  std::string signed_part = b64url(header) + "." + b64url(claims);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(signed_part.data()),
       signed_part.size(), mac, &len);
  return signed_part + "." + b64url(std::string(reinterpret_cast<char*>(mac), len));
}

}  // namespace safe::testing
