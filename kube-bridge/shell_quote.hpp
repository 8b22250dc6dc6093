// One word for a POSIX shell: single quotes, with each ' written as '\''. Used where the bridge
// writes shell text (a Slurm batch script's command line, the Kubernetes entrypoint prelude).
#pragma once

#include <string>
#include <string_view>

namespace safe::bridge {

inline std::string shell_quote(std::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace safe::bridge
