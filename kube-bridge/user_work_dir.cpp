#include "kube-bridge/user_work_dir.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

namespace safe::bridge {
namespace {

constexpr const char* kHomeSubdir = "safe-bridge";

bool plain_user_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

// A directory fit to work in: a directory (not a link), `owner`'s, writable by no one else.
std::string unfit(const struct stat& st, uid_t owner) {
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (st.st_uid != owner) return "belongs to uid " + std::to_string(st.st_uid) + ", not to uid " + std::to_string(owner);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) return "is writable by its group or by others";
  return "";
}

// In a forked child, as the user: mkdir HOME/safe-bridge and check it. Only async-signal-safe
// calls after fork (the bridge has threads). Writes a reason to `fd` and exits 1 on failure.
[[noreturn]] void make_in_home_as_user(const UserRecord& user, const char* home, const char* dir, int fd) {
  auto fail = [fd](const char* what, const char* detail) {
    (void)!write(fd, what, strlen(what));
    if (detail) (void)!write(fd, detail, strlen(detail));
    _exit(1);
  };
  if (setgroups(0, nullptr) != 0 || setgid(user.gid) != 0 || setuid(user.uid) != 0)
    fail("cannot become the user: ", strerror(errno));
  if (access(home, X_OK) != 0) fail("the home directory is not usable: ", strerror(errno));
  if (mkdir(dir, 0700) != 0 && errno != EEXIST) fail("cannot create it: ", strerror(errno));
  struct stat st {};
  if (lstat(dir, &st) != 0) fail("cannot stat it: ", strerror(errno));
  if (!S_ISDIR(st.st_mode)) fail("it is not a directory (a link or a file is in the way)", nullptr);
  if (st.st_uid != user.uid) fail("it belongs to another user", nullptr);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) fail("it is writable by its group or by others", nullptr);
  _exit(0);
}

}  // namespace

Status check_work_dir_base(const std::string& base) {
  if (base.empty()) return ok_status();
  struct stat st {};
  if (lstat(base.c_str(), &st) != 0)
    return Error{"kube_bridge.slurm_work_dir " + base + ": " + std::strerror(errno) +
                 "; create it (mode 0755, owned by root) or set slurm_work_dir to \"\" for users' homes"};
  if (!S_ISDIR(st.st_mode)) return Error{"kube_bridge.slurm_work_dir " + base + " is not a directory (or is a link)"};
  if (st.st_uid != 0 && st.st_uid != geteuid())
    return Error{"kube_bridge.slurm_work_dir " + base + " belongs to uid " + std::to_string(st.st_uid) +
                 "; it must be root's: chown root " + base};
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return Error{"kube_bridge.slurm_work_dir " + base + " is writable by its group or by others (mode " + mode +
                 "): any user could plant files in another's workloads; chmod 0755 " + base +
                 ", or set slurm_work_dir to \"\" for users' homes"};
  }
  return ok_status();
}

Result<std::string> SystemUserWorkDirs::prepare(const UserRecord& user) {
  if (!plain_user_name(user.name)) return Error{"safe: user name '" + user.name + "' cannot name a directory"};
  if (!base_.empty()) {
    std::string dir = base_ + "/" + user.name;
    int base_fd = open(base_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (base_fd < 0) return Error{"safe: kube_bridge.slurm_work_dir " + base_ + ": " + std::strerror(errno)};
    // Root works only inside base (checked at start: no one else writes there), relative to it.
    if (mkdirat(base_fd, user.name.c_str(), 0700) == 0) {
      if (fchownat(base_fd, user.name.c_str(), user.uid, user.gid, AT_SYMLINK_NOFOLLOW) != 0) {
        int e = errno;
        unlinkat(base_fd, user.name.c_str(), AT_REMOVEDIR);
        close(base_fd);
        return Error{"safe: cannot give " + dir + " to " + user.name + ": " + std::strerror(e)};
      }
    } else if (errno != EEXIST) {
      int e = errno;
      close(base_fd);
      return Error{"safe: cannot create " + dir + ": " + std::strerror(e)};
    }
    struct stat st {};
    int rc = fstatat(base_fd, user.name.c_str(), &st, AT_SYMLINK_NOFOLLOW);
    close(base_fd);
    if (rc != 0) return Error{"safe: " + dir + ": " + std::strerror(errno)};
    if (std::string why = unfit(st, user.uid); !why.empty())
      return Error{"safe: the working directory " + dir + " " + why + "; ask an administrator to fix or remove it"};
    return dir;
  }
  if (user.home.empty() || user.home[0] != '/')
    return Error{"safe: user " + user.name + " has no home directory in the user database; ask an administrator"};
  std::string home = user.home, dir = user.home + "/" + kHomeSubdir;
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) return Error{std::string("safe: pipe: ") + std::strerror(errno)};
  pid_t pid = fork();
  if (pid < 0) {
    close(pipefd[0]);
    close(pipefd[1]);
    return Error{std::string("safe: fork: ") + std::strerror(errno)};
  }
  if (pid == 0) {
    close(pipefd[0]);
    make_in_home_as_user(user, home.c_str(), dir.c_str(), pipefd[1]);
  }
  close(pipefd[1]);
  std::string why;
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  bool timed_out = false;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[256];
    ssize_t got = read(pipefd[0], buf, sizeof buf);
    if (got <= 0) break;  // the child is done
    why.append(buf, static_cast<std::size_t>(got));
  }
  close(pipefd[0]);
  if (timed_out) {
    // A home on a hung file system: the request fails and the bridge goes on. The child may not
    // die at once (a system call that cannot be interrupted): a thread of its own reaps it.
    kill(pid, SIGKILL);
    std::thread([pid] {
      int ignored = 0;
      while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
      }
    }).detach();
    return Error{"safe: timed out preparing " + dir + " (is the home file system responding?); retry later"};
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return Error{"safe: cannot use " + dir + " as the working directory: " + (why.empty() ? "failed" : why) +
                 "; fix it (it must be a directory of yours that only you can write) and retry"};
  return dir;
}

}  // namespace safe::bridge
