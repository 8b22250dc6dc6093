#include "common/user_directory.hpp"

#include <grp.h>
#include <pwd.h>

#include <chrono>
#include <map>
#include <mutex>

#include "common/job_user.hpp"

namespace safe {
namespace {

std::optional<UserRecord> from_passwd(const passwd& pw) {
  return UserRecord{pw.pw_name, pw.pw_uid, pw.pw_gid, group_names_of(pw.pw_name, pw.pw_gid), pw.pw_dir ? pw.pw_dir : ""};
}

// Every request authenticates; an NSS lookup (files, LDAP, sssd) per request would dominate.
struct Cache {
  std::mutex mutex;
  std::map<std::string, std::pair<std::chrono::steady_clock::time_point, UserRecord>> by_name;
  std::map<uid_t, std::pair<std::chrono::steady_clock::time_point, UserRecord>> by_uid;
};
Cache& cache() {
  static Cache c;
  return c;
}
constexpr auto kTtl = std::chrono::seconds(60);

void remember(const UserRecord& u) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(cache().mutex);
  if (cache().by_name.size() > 10000) cache().by_name.clear(), cache().by_uid.clear();
  cache().by_name[u.name] = {now, u};
  cache().by_uid[u.uid] = {now, u};
}

}  // namespace

std::optional<UserRecord> SystemUserDirectory::by_name(const std::string& name) {
  {
    std::lock_guard lock(cache().mutex);
    auto it = cache().by_name.find(name);
    if (it != cache().by_name.end() && std::chrono::steady_clock::now() - it->second.first < kTtl) return it->second.second;
  }
  std::vector<char> buf(16384);
  passwd pw;
  passwd* found = nullptr;
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) return std::nullopt;
  auto user = from_passwd(pw);
  if (user) remember(*user);
  return user;
}

std::optional<UserRecord> SystemUserDirectory::by_uid(uid_t uid) {
  {
    std::lock_guard lock(cache().mutex);
    auto it = cache().by_uid.find(uid);
    if (it != cache().by_uid.end() && std::chrono::steady_clock::now() - it->second.first < kTtl) return it->second.second;
  }
  std::vector<char> buf(16384);
  passwd pw;
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found) return std::nullopt;
  auto user = from_passwd(pw);
  if (user) remember(*user);
  return user;
}

}  // namespace safe
