// The user a job runs as, resolved from its uid through the system's user database (NSS).
#pragma once

#include <sys/types.h>

#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/admission.hpp"

namespace safe {

// nullopt when the uid has no passwd entry.
std::optional<JobUser> lookup_job_user(uid_t uid);

// The names of every group `user` is in (its primary group `primary_gid` included).
std::vector<std::string> group_names_of(const std::string& user, gid_t primary_gid);

}  // namespace safe

namespace safe {

// Lookups remembered for `ttl_seconds`: slurmctld reviews every submission, and a user database
// read (files, LDAP, sssd) per job would add up. Group changes are seen after the TTL.
class JobUserCache {
 public:
  using Lookup = std::optional<JobUser> (*)(uid_t);
  explicit JobUserCache(int ttl_seconds = 60, Lookup lookup = lookup_job_user)
      : ttl_(ttl_seconds), lookup_(lookup) {}
  std::optional<JobUser> get(uid_t uid, std::time_t now);

 private:
  struct Entry {
    std::time_t fetched;
    std::optional<JobUser> user;
  };
  int ttl_;
  Lookup lookup_;
  std::mutex mutex_;
  std::unordered_map<uid_t, Entry> entries_;
};

}  // namespace safe
