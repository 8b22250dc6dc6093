#include "common/base64.hpp"

namespace safe {

std::optional<std::string> base64_decode(std::string_view in, Base64 alphabet) {
  const char c62 = alphabet == Base64::url ? '-' : '+';
  const char c63 = alphabet == Base64::url ? '_' : '/';
  std::string out;
  out.reserve(in.size() * 3 / 4);
  unsigned buffer = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == c62) v = 62;
    else if (c == c63) v = 63;
    else if (alphabet == Base64::standard && (c == '=' || c == '\n' || c == '\r')) continue;
    else return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xff));
    }
  }
  if (alphabet == Base64::url && bits >= 6) return std::nullopt;
  return out;
}

}  // namespace safe
