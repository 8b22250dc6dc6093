#include "common/checkpoint_fence.hpp"

#include <fcntl.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cctype>
#include <charconv>
#include <cstring>
#include <vector>

#include "common/checkpoint_scan.hpp"
#include "common/unique_fd.hpp"
#include "common/user_file.hpp"

namespace safe {
namespace {

constexpr std::size_t kMaxFenceBytes = 4096;

std::optional<int> positive_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

bool plain_job_id(std::string_view s) {
  if (s.empty() || s.size() > 32) return false;
  for (char c : s)
    if (!(c >= '0' && c <= '9') && c != '_') return false;  // 1234, or an array task's 1234_5
  return true;
}

// The value of `key=` in whitespace-separated words.
std::optional<std::string_view> word_value(std::string_view text, std::string_view key) {
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    std::size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    std::string_view word = text.substr(i, j - i);
    if (word.size() > key.size() && word.substr(0, key.size()) == key && word[key.size()] == '=')
      return word.substr(key.size() + 1);
    i = j;
  }
  return std::nullopt;
}

// Files written while this lives are the user's (`uid`, `gid`): a root caller (safed) switches its
// thread's file-system ids, which also makes a root-squashing NFS server accept the writes.
class WriteAs {
 public:
  WriteAs(std::optional<uid_t> uid, gid_t gid) : active_(uid && geteuid() == 0) {
    if (!active_) return;
    setfsgid(gid);
    setfsuid(*uid);
  }
  ~WriteAs() {
    if (!active_) return;
    setfsuid(0);
    setfsgid(0);
  }
  WriteAs(const WriteAs&) = delete;
  WriteAs& operator=(const WriteAs&) = delete;

 private:
  bool active_;
};

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

// An open directory, not a link, owned by `owner`.
Result<int> open_owned_dir(int at, const std::string& name, const std::string& shown, std::optional<uid_t> owner) {
  int fd = openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Error{errno_text(shown)};
  struct stat st {};
  if (fstat(fd, &st) != 0 || (owner && st.st_uid != *owner)) {
    close(fd);
    return Error{shown + " does not belong to uid " + std::to_string(owner.value_or(0))};
  }
  return fd;
}

// The gid the fence is written with: the directory's, looked up without following a link. The
// directory must be the owner's; it is opened (again without following) as that user.
Result<gid_t> owned_dir_gid(const std::string& dir, std::optional<uid_t> owner) {
  struct stat ds {};
  if (lstat(dir.c_str(), &ds) != 0) return Error{errno_text(dir)};
  if (!S_ISDIR(ds.st_mode)) return Error{dir + " is not a directory"};
  if (owner && ds.st_uid != *owner) return Error{dir + " does not belong to uid " + std::to_string(*owner)};
  return ds.st_gid;
}

// Fences `attempt` with what `scan` found in `dir`, as the user WriteAs set.
Result<FenceOutcome> write_fence(const std::string& dir, std::optional<uid_t> owner, const CheckpointLabel& attempt,
                                 const CheckpointScan& scan) {
  if (!plain_job_id(attempt.job) || attempt.attempt <= 0)
    return Error{"cannot fence job '" + attempt.job + "' attempt " + std::to_string(attempt.attempt)};
  if (auto it = scan.fences.find({attempt.job, attempt.attempt}); it != scan.fences.end())
    return FenceOutcome{false, it->second};
  std::vector<CheckpointCandidate> own;
  for (const auto& c : scan.candidates)
    if (c.label && *c.label == attempt) own.push_back(c);
  int best = pick_resume_checkpoint(own);
  FenceOutcome out{true, best < 0 ? "" : own[best].name};

  auto dfd = open_owned_dir(AT_FDCWD, dir, dir, owner);
  if (!dfd) return Error{dfd.error()};
  UniqueFd d(*dfd);
  std::string fence_dir = dir + "/" + kFenceDirName;
  if (mkdirat(d.get(), kFenceDirName, 0755) != 0 && errno != EEXIST) return Error{errno_text(fence_dir)};
  auto ffd = open_owned_dir(d.get(), kFenceDirName, fence_dir, owner);
  if (!ffd) return Error{ffd.error()};
  UniqueFd f(*ffd);
  // Written whole under a name of its own, then linked into place: a reader sees no fence or the
  // complete one, and of writers racing (tasks on every node of the job, safed) the first stands.
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  std::string tmp = ".tmp." + std::string(host) + "." + std::to_string(getpid()) + "." +
                    std::to_string(static_cast<long>(syscall(SYS_gettid)));
  std::string final_name = fence_file_name(attempt);
  {
    UniqueFd w(openat(f.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (w.get() < 0) return Error{errno_text(fence_dir + "/" + tmp)};
    std::string text = fence_file_text(out.checkpoint);
    if (write(w.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) || fsync(w.get()) != 0) {
      std::string why = errno_text(fence_dir + "/" + tmp);
      unlinkat(f.get(), tmp.c_str(), 0);
      return Error{why};
    }
  }
  int linked = linkat(f.get(), tmp.c_str(), f.get(), final_name.c_str(), 0);
  int link_errno = errno;
  unlinkat(f.get(), tmp.c_str(), 0);
  if (linked == 0) {
    fsync(f.get());
    return out;
  }
  if (link_errno != EEXIST) {
    errno = link_errno;
    return Error{errno_text(fence_dir + "/" + final_name)};
  }
  auto text = read_user_file_at(f.get(), final_name, owner, kMaxFenceBytes);
  auto existing = text ? parse_fence_file_text(*text) : std::nullopt;
  if (!existing) return Error{fence_dir + "/" + final_name + " is there but unreadable"};
  return FenceOutcome{false, *existing};
}

}  // namespace

std::optional<CheckpointLabel> parse_checkpoint_label(std::string_view marker_text) {
  auto job = word_value(marker_text, "job");
  auto attempt = word_value(marker_text, "attempt");
  if (!job || !attempt || !plain_job_id(*job)) return std::nullopt;
  auto n = positive_int(*attempt);
  if (!n) return std::nullopt;
  return CheckpointLabel{std::string(*job), *n};
}

std::string checkpoint_label_text(const CheckpointLabel& label) {
  return "job=" + label.job + " attempt=" + std::to_string(label.attempt) + "\n";
}

std::string fence_file_name(const CheckpointLabel& attempt) {
  return "job-" + attempt.job + ".attempt-" + std::to_string(attempt.attempt);
}

std::optional<CheckpointLabel> parse_fence_file_name(std::string_view name) {
  constexpr std::string_view kJob = "job-", kAttempt = ".attempt-";
  if (name.substr(0, kJob.size()) != kJob) return std::nullopt;
  std::size_t dot = name.find(kAttempt);
  if (dot == std::string_view::npos) return std::nullopt;
  std::string_view job = name.substr(kJob.size(), dot - kJob.size());
  auto n = positive_int(name.substr(dot + kAttempt.size()));
  if (!plain_job_id(job) || !n) return std::nullopt;
  return CheckpointLabel{std::string(job), *n};
}

std::string fence_file_text(const std::string& checkpoint) { return "checkpoint=" + checkpoint + "\n"; }

std::optional<std::string> parse_fence_file_text(std::string_view text) {
  constexpr std::string_view kKey = "checkpoint=";
  if (text.substr(0, kKey.size()) != kKey) return std::nullopt;
  std::string_view rest = text.substr(kKey.size());
  std::size_t end = rest.find('\n');
  if (end == std::string_view::npos || end + 1 != rest.size()) return std::nullopt;  // torn or extended
  std::string_view name = rest.substr(0, end);
  if (name.find('/') != std::string_view::npos || name == "." || name == "..") return std::nullopt;
  return std::string(name);
}

bool fenced_out(const std::optional<CheckpointLabel>& label, const std::string& name, const CheckpointFences& fences) {
  if (!label) return false;
  auto it = fences.find({label->job, label->attempt});
  return it != fences.end() && it->second != name;
}

Result<FenceOutcome> fence_attempt(const std::string& dir, const std::string& marker, std::optional<uid_t> owner,
                                   const CheckpointLabel& attempt) {
  auto gid = owned_dir_gid(dir, owner);
  if (!gid) return Error{gid.error()};
  WriteAs as_user(owner, *gid);
  auto scan = scan_checkpoints(dir, marker, owner);
  if (!scan) return Error{scan.error()};
  return write_fence(dir, owner, attempt, *scan);
}

Result<FenceOutcome> fence_attempt(const std::string& dir, std::optional<uid_t> owner, const CheckpointLabel& attempt,
                                   const CheckpointScan& scan) {
  auto gid = owned_dir_gid(dir, owner);
  if (!gid) return Error{gid.error()};
  WriteAs as_user(owner, *gid);
  return write_fence(dir, owner, attempt, scan);
}

}  // namespace safe
