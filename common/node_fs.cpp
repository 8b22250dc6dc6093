#include "common/node_fs.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace safe {

NodeFs::NodeFs(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
}

std::string NodeFs::path(std::string_view absolute) const {
  if (root_ == "/") return std::string(absolute);
  return root_ + std::string(absolute);
}

std::optional<std::string> NodeFs::read(std::string_view absolute) const {
  std::ifstream in(path(absolute), std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return s.str();
}

std::optional<std::string> NodeFs::read_line(std::string_view absolute) const {
  auto text = read(absolute);
  if (!text) return std::nullopt;
  std::string line = text->substr(0, text->find('\n'));
  auto first = line.find_first_not_of(" \t\r");
  if (first == std::string::npos) return std::string();
  auto last = line.find_last_not_of(" \t\r");
  return line.substr(first, last - first + 1);
}

std::vector<std::string> NodeFs::list(std::string_view absolute_dir) const {
  std::vector<std::string> names;
  DIR* dir = opendir(path(absolute_dir).c_str());
  if (!dir) return names;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

bool NodeFs::exists(std::string_view absolute) const {
  struct stat st;
  return stat(path(absolute).c_str(), &st) == 0;
}

}  // namespace safe
