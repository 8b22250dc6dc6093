#include "common/config_cache.hpp"

#include <sys/stat.h>

namespace safe {

ConfigCache::ConfigCache(std::string path) : path_(std::move(path)) {}

std::shared_ptr<const SafeConfig> ConfigCache::get(std::vector<std::string>& log) {
  std::lock_guard<std::mutex> lock(mutex_);
  FileStamp now;
  struct stat st;
  if (stat(path_.c_str(), &st) == 0) {
    now.exists = true;
    now.inode = st.st_ino;
    now.size = st.st_size;
    now.mtime = st.st_mtim;
  }
  if (checked_ && now == stamp_) return current_;
  checked_ = true;
  stamp_ = now;

  if (!now.exists) {
    if (current_)
      log.push_back("safe: " + path_ + " is gone; keeping the config read before");
    else
      log.push_back("safe: no config at " + path_ + "; SaFE admits every job unchanged until one is installed");
    return current_;
  }
  ConfigResult result = load_config_file(path_);
  if (!result.ok()) {
    std::string first = result.errors.front().to_string();
    std::string more = result.errors.size() > 1 ? " (and " + std::to_string(result.errors.size() - 1) + " more)" : "";
    log.push_back("safe: " + first + more + "; " +
                  (current_ ? "keeping the previous config" : "admitting every job unchanged") +
                  " until the file is fixed (check it with: safectl config check " + path_ + ")");
    return current_;
  }
  current_ = std::make_shared<const SafeConfig>(std::move(*result.config));
  log.push_back("safe: loaded " + path_ + " (" + std::to_string(current_->workspaces.size()) + " workspaces)");
  return current_;
}

}  // namespace safe
