// A user database for the bridge's unit tests: the users a test names, nothing from NSS.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "common/user_directory.hpp"

namespace safe::bridge {

class FakeUserDirectory : public UserDirectory {
 public:
  explicit FakeUserDirectory(std::map<std::string, UserRecord> users) : users(std::move(users)) {}
  std::optional<UserRecord> by_name(const std::string& n) override {
    auto it = users.find(n);
    return it == users.end() ? std::nullopt : std::optional(it->second);
  }
  std::optional<UserRecord> by_uid(uid_t uid) override {
    for (auto& [n, u] : users)
      if (u.uid == uid) return u;
    return std::nullopt;
  }
  std::map<std::string, UserRecord> users;
};

}  // namespace safe::bridge
