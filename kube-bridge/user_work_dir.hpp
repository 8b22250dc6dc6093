// Where a user's Slurm workloads run. Each workload runs with its user's own HOME (the passwd
// entry) and in a working directory that user owns and no one else can write: with a shared one
// (the old /tmp default) any user could plant ~/.local/lib/python3*/site-packages/x.pth there and
// run code in every other user's next Python workload, root's included.
//   slurm_work_dir "":   HOME/safe-bridge, made by a child process running as the user (so a home
//                        on root-squashed NFS works, and root never writes into a user's home);
//   slurm_work_dir DIR:  DIR/USER, made by root inside DIR, which must be root's and not group-
//                        or world-writable (checked at start: no one else can race root there).
// Either way the directory must be a directory (not a link) owned by the user, mode 0700 when
// made, never group- or world-writable.
#pragma once

#include <chrono>

#include "common/result.hpp"
#include "common/user_directory.hpp"

namespace safe::bridge {

class UserWorkDirs {
 public:
  virtual ~UserWorkDirs() = default;
  // The user's working directory, made if missing; an error says what is wrong and who fixes it.
  virtual Result<std::string> prepare(const UserRecord& user) = 0;
};

// kube_bridge.slurm_work_dir at start: "" (users' homes) or a directory that only root (or this
// process's uid) can write.
Status check_work_dir_base(const std::string& base);

class SystemUserWorkDirs final : public UserWorkDirs {
 public:
  // `timeout` bounds the child that works in a user's home (which may sit on a hung NFS server).
  SystemUserWorkDirs(std::string base, std::chrono::milliseconds timeout) : base_(std::move(base)), timeout_(timeout) {}
  Result<std::string> prepare(const UserRecord& user) override;

 private:
  std::string base_;
  std::chrono::milliseconds timeout_;
};

}  // namespace safe::bridge
