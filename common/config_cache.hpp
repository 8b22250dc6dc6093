// The config as a long-running process sees it: re-read when the file changes, the last good
// version kept when a new one is broken. Used inside slurmctld (job_submit), so a check is one
// stat() and nothing else unless the file changed.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.hpp"

namespace safe {

class ConfigCache {
 public:
  explicit ConfigCache(std::string path);

  // The current config; null when no valid config has been read yet (file missing or broken).
  // Appends to `log` what an admin should know about this call (a reload, a rejected edit, a
  // missing file); each condition is reported once, not on every call.
  std::shared_ptr<const SafeConfig> get(std::vector<std::string>& log);

  const std::string& path() const { return path_; }

 private:
  struct FileStamp {
    bool exists = false;
    ino_t inode = 0;
    off_t size = 0;
    timespec mtime{};
    bool operator==(const FileStamp& o) const {
      return exists == o.exists && inode == o.inode && size == o.size && mtime.tv_sec == o.mtime.tv_sec &&
             mtime.tv_nsec == o.mtime.tv_nsec;
    }
  };

  std::string path_;
  std::mutex mutex_;
  bool checked_ = false;
  FileStamp stamp_;
  std::shared_ptr<const SafeConfig> current_;
};

}  // namespace safe
