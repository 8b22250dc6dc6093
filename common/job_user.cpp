#include "common/job_user.hpp"

#include <grp.h>
#include <pwd.h>

#include <vector>

namespace safe {

std::vector<std::string> group_names_of(const std::string& user, gid_t primary_gid) {
  int count = 64;
  std::vector<gid_t> gids(count);
  if (getgrouplist(user.c_str(), primary_gid, gids.data(), &count) < 0) {
    gids.resize(count);
    if (getgrouplist(user.c_str(), primary_gid, gids.data(), &count) < 0) count = 0;
  }
  gids.resize(count);
  std::vector<std::string> names;
  std::vector<char> buf(16384);
  for (gid_t gid : gids) {
    group gr;
    group* g = nullptr;
    if (getgrgid_r(gid, &gr, buf.data(), buf.size(), &g) == 0 && g) names.emplace_back(g->gr_name);
  }
  return names;
}

std::optional<JobUser> lookup_job_user(uid_t uid) {
  std::vector<char> buf(16384);
  passwd pw;
  passwd* found = nullptr;
  if (getpwuid_r(uid, &pw, buf.data(), buf.size(), &found) != 0 || !found) return std::nullopt;
  JobUser user;
  user.name = pw.pw_name;
  user.groups = group_names_of(user.name, pw.pw_gid);
  return user;
}

std::optional<JobUser> JobUserCache::get(uid_t uid, std::time_t now) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(uid);
  if (it != entries_.end() && now - it->second.fetched < ttl_ && now >= it->second.fetched) return it->second.user;
  if (entries_.size() > 100000) entries_.clear();  // bounded: a uid scan cannot grow it forever
  std::optional<JobUser> user = lookup_(uid);
  if (user) entries_[uid] = Entry{now, user};  // a missing user may be added any moment: not cached
  return user;
}

}  // namespace safe
