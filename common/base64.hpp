// Base64 decoding for the bridge's two inputs: JWTs (RFC 4648 base64url, unpadded, strict) and
// kubeconfig `*-data` fields (standard alphabet, padded, line breaks allowed); encoding in the
// standard alphabet, padded, for etcd's JSON gateway (keys and values are bytes).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace safe {

enum class Base64 {
  url,       // '-' and '_'; no padding, no other characters, no dangling bits
  standard,  // '+' and '/'; '=' padding and CR/LF are skipped
};

// nullopt for a character outside the alphabet (or, for `url`, a length no encoder produces).
std::optional<std::string> base64_decode(std::string_view in, Base64 alphabet);

// The standard alphabet, padded.
std::string base64_encode(std::string_view in);

}  // namespace safe
