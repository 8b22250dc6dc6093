// The cluster shape as the job_submit plugin sees it: re-read when safed rewrites the file, the
// last good version kept when a new one is unreadable. One stat() per call otherwise. The file
// decides GPU charges, so only one root (or this process's user) owns is believed.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/cluster_shape.hpp"

namespace safe {

class ClusterShapeCache {
 public:
  // The shape at `path`; null while none has been read. `log` gets what an admin should know,
  // each condition once (missing, unreadable, stale).
  std::shared_ptr<const ClusterShape> get(const std::string& path, std::time_t now, std::vector<std::string>& log);

 private:
  std::mutex mutex_;
  std::string path_;
  ino_t inode_ = 0;
  timespec mtime_{};
  bool reported_missing_ = false, reported_stale_ = false;
  std::shared_ptr<const ClusterShape> current_;
};

// Older than this, the shape is still used (partitions rarely change) but an admin is told that
// safed seems not to run.
constexpr long long kClusterShapeStale_s = 15 * 60;

}  // namespace safe
