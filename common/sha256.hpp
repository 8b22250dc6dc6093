// SHA-256 of a byte string, as lowercase hex (what sha256sum prints). safed reports the digest of
// the safe.yaml it runs with, and `safectl doctor` compares it with each host's file.
#pragma once

#include <string>
#include <string_view>

namespace safe {

std::string sha256_hex(std::string_view data);

}  // namespace safe
