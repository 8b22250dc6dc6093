#include "common/checkpoint_scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/user_file.hpp"

namespace safe {
namespace {

// A marker or fence holds a line; anything longer was not written for SaFE (an unlabelled marker).
constexpr std::size_t kMaxLabelBytes = 4096;

class Dir {
 public:
  explicit Dir(DIR* d) : d_(d) {}
  ~Dir() {
    if (d_) closedir(d_);
  }
  Dir(const Dir&) = delete;
  Dir& operator=(const Dir&) = delete;
  DIR* get() const { return d_; }

 private:
  DIR* d_;
};

// The fences in <dir>/.safe-fence that `owner` wrote; none when there is no such directory.
CheckpointFences read_fences(int dfd, std::optional<uid_t> owner, std::size_t max_entries) {
  CheckpointFences fences;
  int ffd = openat(dfd, kFenceDirName, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (ffd < 0) return fences;
  struct stat fs {};
  if (fstat(ffd, &fs) != 0 || (owner && fs.st_uid != *owner)) {
    close(ffd);  // another user's fences would let them deny this user's resume
    return fences;
  }
  Dir d(fdopendir(ffd));
  if (!d.get()) {
    close(ffd);
    return fences;
  }
  std::size_t seen = 0;
  while (dirent* e = readdir(d.get())) {
    if (++seen > max_entries) break;
    auto attempt = parse_fence_file_name(e->d_name);
    if (!attempt) continue;
    auto text = read_user_file_at(ffd, e->d_name, owner, kMaxLabelBytes);
    if (!text) continue;
    auto checkpoint = parse_fence_file_text(*text);
    if (checkpoint) fences[{attempt->job, attempt->attempt}] = *checkpoint;
  }
  return fences;
}

}  // namespace

int pick_resume_checkpoint(const std::vector<CheckpointCandidate>& candidates, const CheckpointFences& fences) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
    const auto& c = candidates[i];
    if (!c.complete || fenced_out(c.label, c.name, fences)) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const auto& b = candidates[best];
    if (c.marker_mtime > b.marker_mtime || (c.marker_mtime == b.marker_mtime && c.name > b.name)) best = i;
  }
  return best;
}

Result<CheckpointScan> scan_checkpoints(const std::string& dir, const std::string& marker, std::optional<uid_t> owner,
                                        std::size_t max_entries) {
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
  Dir d(fdopendir(dfd));
  if (!d.get()) {
    close(dfd);
    return Error{dir + ": " + std::strerror(errno)};
  }
  CheckpointScan scan;
  scan.fences = read_fences(dfd, owner, max_entries);
  std::size_t seen = 0;
  while (dirent* e = readdir(d.get())) {
    std::string name = e->d_name;
    if (name == "." || name == ".." || name == kFenceDirName) continue;
    if (++seen > max_entries)
      return Error{dir + " holds more than " + std::to_string(max_entries) + " entries; no checkpoint is looked for"};
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    int cfd = openat(dfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (cfd < 0) continue;
    struct stat cs {};
    CheckpointCandidate c{name, false, 0, 0, std::nullopt};
    if (fstat(cfd, &cs) == 0 && (!owner || cs.st_uid == *owner)) {
      struct stat ms {};
      if (fstatat(cfd, marker.c_str(), &ms, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(ms.st_mode) &&
          (!owner || ms.st_uid == *owner)) {
        c.complete = true;
        c.marker_mtime = ms.st_mtime;
        c.marker_mtime_ns = static_cast<long long>(ms.st_mtim.tv_sec) * 1000000000LL + ms.st_mtim.tv_nsec;
        if (ms.st_size > 0 && static_cast<std::size_t>(ms.st_size) <= kMaxLabelBytes)
          if (auto text = read_user_file_at(cfd, marker, owner, kMaxLabelBytes)) c.label = parse_checkpoint_label(*text);
      }
      scan.candidates.push_back(std::move(c));
    }
    close(cfd);
  }
  return scan;
}

Result<NewestCheckpoint> newest_complete_checkpoint(const std::string& dir, const std::string& marker,
                                                    std::optional<uid_t> owner, std::size_t max_entries) {
  auto scan = scan_checkpoints(dir, marker, owner, max_entries);
  if (!scan) return Error{scan.error()};
  int best = pick_resume_checkpoint(scan->candidates, scan->fences);
  if (best < 0) return NewestCheckpoint{};
  std::string base = dir;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  const auto& c = scan->candidates[best];
  return NewestCheckpoint{base + "/" + c.name, c.marker_mtime, c.marker_mtime_ns};
}

}  // namespace safe
