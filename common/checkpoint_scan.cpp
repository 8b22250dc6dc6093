#include "common/checkpoint_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

Result<NewestCheckpoint> newest_complete_checkpoint(const std::string& dir, const std::string& marker,
                                                    std::optional<uid_t> owner, std::size_t max_entries) {
  // Every lookup is relative to a descriptor already checked: no path is followed twice and no
  // link is followed at all, so entries swapped meanwhile cannot lead elsewhere.
  int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return Error{dir + ": " + std::strerror(errno)};
  struct stat ds {};
  if (fstat(dfd, &ds) != 0 || (owner && ds.st_uid != *owner)) {
    close(dfd);
    return Error{dir + " belongs to uid " + std::to_string(ds.st_uid) + ", not to the job's user (uid " +
                 std::to_string(owner.value_or(0)) + "); no checkpoint in it is used"};
  }
  DIR* d = fdopendir(dfd);
  if (!d) {
    close(dfd);
    return Error{dir + ": " + std::strerror(errno)};
  }
  std::vector<CheckpointCandidate> candidates;
  std::vector<long long> marker_ns;  // beside `candidates`
  std::size_t seen = 0;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (++seen > max_entries) {
      closedir(d);
      return Error{dir + " holds more than " + std::to_string(max_entries) + " entries; no checkpoint is looked for"};
    }
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    int cfd = openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cfd < 0) continue;
    struct stat cs {};
    CheckpointCandidate c{name, false, 0};
    if (fstat(cfd, &cs) == 0 && (!owner || cs.st_uid == *owner)) {
      struct stat ms {};
      long long ns = 0;
      if (fstatat(cfd, marker.c_str(), &ms, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ms.st_mode) &&
          (!owner || ms.st_uid == *owner)) {
        c.complete = true;
        c.marker_mtime = ms.st_mtime;
        ns = static_cast<long long>(ms.st_mtim.tv_sec) * 1000000000LL + ms.st_mtim.tv_nsec;
      }
      candidates.push_back(std::move(c));
      marker_ns.push_back(ns);
    }
    close(cfd);
  }
  closedir(d);
  int best = pick_resume_checkpoint(candidates);
  if (best < 0) return NewestCheckpoint{};
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return NewestCheckpoint{base + "/" + candidates[best].name, candidates[best].marker_mtime, marker_ns[best]};
}

}  // namespace safe
