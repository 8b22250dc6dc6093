#include "common/json_utf8.hpp"

namespace safe {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

// Length of the valid UTF-8 sequence at text[i], or 0 (RFC 3629, table 3-7 of Unicode).
std::size_t sequence_length(std::string_view t, std::size_t i) {
  auto at = [&](std::size_t k) { return static_cast<unsigned char>(t[k]); };
  unsigned char c = at(i);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > t.size()) return 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range depends on the first
  if (c == 0xE0) lo = 0xA0;
  if (c == 0xED) hi = 0x9F;  // no surrogates
  if (c == 0xF0) lo = 0x90;
  if (c == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::size_t n = sequence_length(text, i);
    if (n == 0) {
      out += kReplacement;
      ++i;
      continue;
    }
    out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

json_t* json_utf8(std::string_view text) {
  // The common case needs no copy: jansson checks the bytes itself.
  if (json_t* s = json_stringn(text.data(), text.size())) return s;
  std::string fixed = valid_utf8(text);
  return json_stringn(fixed.data(), fixed.size());
}

}  // namespace safe
