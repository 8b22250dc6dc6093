// Users as SaFE's services need them: a verified credential names a user (JWT: by name, munge: by
// uid); the bridge submits Slurm jobs as that uid/gid, in that user's home, and checks workspace
// membership with its groups. A seam, so unit tests need no passwd entries.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace safe {

struct UserRecord {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<std::string> groups;
  std::string home;  // the passwd entry's home directory
};

class UserDirectory {
 public:
  virtual ~UserDirectory() = default;
  virtual std::optional<UserRecord> by_name(const std::string& name) = 0;
  virtual std::optional<UserRecord> by_uid(uid_t uid) = 0;
};

// The system's user database (NSS), each answer remembered for a minute.
class SystemUserDirectory : public UserDirectory {
 public:
  std::optional<UserRecord> by_name(const std::string& name) override;
  std::optional<UserRecord> by_uid(uid_t uid) override;
};

}  // namespace safe
