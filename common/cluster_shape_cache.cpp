#include "common/cluster_shape_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "common/user_file.hpp"

namespace safe {

std::shared_ptr<const ClusterShape> ClusterShapeCache::get(const std::string& path, std::time_t now,
                                                           std::vector<std::string>& log) {
  std::lock_guard lock(mutex_);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (!reported_missing_)
      log.push_back("safe: no cluster shape at " + path + " (safed publishes it); jobs whose GPU charge needs it are "
                    "refused until safed runs");
    reported_missing_ = true;
    return current_;
  }
  reported_missing_ = false;
  bool changed = path != path_ || st.st_ino != inode_ || st.st_mtim.tv_sec != mtime_.tv_sec ||
                 st.st_mtim.tv_nsec != mtime_.tv_nsec;
  if (changed) {
    path_ = path;
    inode_ = st.st_ino;
    mtime_ = st.st_mtim;
    std::optional<uid_t> owner = st.st_uid == geteuid() ? geteuid() : 0;
    auto text = read_user_file(path, owner, 1 << 20);
    std::optional<ClusterShape> shape = text ? parse_cluster_shape(*text) : std::nullopt;
    if (!shape) {
      log.push_back("safe: cannot use the cluster shape " + path + " (" + (text ? "not one safed wrote" : text.error()) +
                    "); " + (current_ ? "keeping the one read before" : "refusing jobs whose GPU charge needs it"));
    } else {
      current_ = std::make_shared<const ClusterShape>(std::move(*shape));
      reported_stale_ = false;
    }
  }
  if (current_ && now - current_->written > kClusterShapeStale_s && !reported_stale_) {
    log.push_back("safe: the cluster shape " + path + " is " + std::to_string((now - current_->written) / 60) +
                  " minutes old: is safed running? (still used: partitions seldom change)");
    reported_stale_ = true;
  }
  return current_;
}

}  // namespace safe
