#include "common/checkpoint_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace safe {

int pick_resume_checkpoint(const std::vector<CheckpointCandidate>& candidates) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
    const auto& c = candidates[i];
    if (!c.complete) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const auto& b = candidates[best];
    if (c.marker_mtime > b.marker_mtime || (c.marker_mtime == b.marker_mtime && c.name > b.name)) best = i;
  }
  return best;
}

std::string newest_complete_checkpoint(const std::string& dir, const std::string& marker) {
  // openat/fstatat relative to the directory: no path is followed twice, no symlink followed.
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return "";
  DIR* d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return "";
  }
  std::vector<CheckpointCandidate> candidates;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    CheckpointCandidate c{name, false, 0};
    std::string marker_path = name + "/" + marker;
    struct stat ms;
    if (fstatat(dfd, marker_path.c_str(), &ms, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ms.st_mode)) {
      c.complete = true;
      c.marker_mtime = ms.st_mtime;
    }
    candidates.push_back(std::move(c));
  }
  closedir(d);
  int best = pick_resume_checkpoint(candidates);
  if (best < 0) return "";
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/" + candidates[best].name;
}

}  // namespace safe
