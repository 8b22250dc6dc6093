// The web console's files (kube-bridge/console/, compiled in at build time): the bridge serves
// them under /console/ itself, so the console needs no web server and fetches nothing elsewhere.
#pragma once

#include <string>
#include <string_view>

namespace safe::bridge {

struct ConsoleAsset {
  std::string_view content_type;
  const std::string* body = nullptr;  // null: no such file
};

// `name` is the path after /console/ ("" is the page itself).
ConsoleAsset console_asset(std::string_view name);

}  // namespace safe::bridge
