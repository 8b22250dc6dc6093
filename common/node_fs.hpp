// NodeFs: the one way SaFE reads /proc, /sys and /dev. Every such path is resolved under a root
// directory, "/" on a real node and a fixture tree in tests, so checks run against files a test
// writes instead of the machine it happens to run on.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace safe {

class NodeFs {
 public:
  explicit NodeFs(std::string root = "/");

  // `absolute` is a path as on the node ("/proc/meminfo"); the result is where it lies here.
  std::string path(std::string_view absolute) const;
  const std::string& root() const { return root_; }

  // Whole file, or nullopt when it cannot be read.
  std::optional<std::string> read(std::string_view absolute) const;
  // First line without the newline and surrounding blanks (sysfs attributes).
  std::optional<std::string> read_line(std::string_view absolute) const;
  // Entry names of a directory (no "." or ".."), sorted; empty when it cannot be read.
  std::vector<std::string> list(std::string_view absolute_dir) const;
  bool exists(std::string_view absolute) const;

 private:
  std::string root_;
};

}  // namespace safe
