// Who is asking: the two credentials Slurm itself accepts.
//   Authorization: Bearer <JWT>    HS256 with the cluster's auth/jwt key, as `scontrol token`
//                                  makes them (claims exp, iat, sun)
//   Authorization: Munge <cred>    a munge credential (`munge -n`), decoded by munged
// The result names a user of the system; admins (auth.admins) see and change everything. Used by
// safed's API and the REST bridge alike.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "common/result.hpp"
#include "common/user_directory.hpp"

namespace safe {

struct Principal {
  UserRecord user;
  bool admin = false;
  std::string method;  // "jwt" or "munge"
};

struct AuthResult {
  std::optional<Principal> principal;
  std::string error;  // for the 401 body: what was wrong and how to get a credential
};

// The verified claims of a JWT, or why it is not acceptable.
struct JwtCheck {
  std::optional<std::string> user;  // the `sun` claim
  std::string error;
};
JwtCheck verify_slurm_jwt(std::string_view token, std::string_view key, std::time_t now);

// Decodes a munge credential into the uid that made it and the payload it carries. A seam over
// libmunge.
class MungeDecoder {
 public:
  virtual ~MungeDecoder() = default;
  struct Result {
    std::optional<uid_t> uid;
    std::string error;
    std::string payload{};
  };
  virtual Result decode(const std::string& credential) = 0;
};

class LibMungeDecoder : public MungeDecoder {
 public:
  Result decode(const std::string& credential) override;
};

struct AuthSettings {
  std::string jwt_key;  // raw key bytes; empty: JWT off
  bool munge = true;
  std::vector<std::string> admins;
};

// The settings of safe.yaml's `auth` section (the JWT key still to be read: read_jwt_key).
AuthSettings auth_settings_from(const AuthConfig& config);

// Slurm's auth/jwt key file: its bytes, refused when group or others can read it (Slurm's rule).
Result<std::string> read_jwt_key(const std::string& path);

// A fresh munge credential of this process's user, for a request to safed (`Authorization:
// Munge ...`); munged rejects a credential used twice, so one per request. With a payload, the
// credential carries it, signed: whoever gets hold of it can deliver that payload once, and
// nothing else (Authenticator::open_munge_payload; authenticate() refuses such a credential).
Result<std::string> new_munge_credential(std::string_view payload = {});

class Authenticator {
 public:
  Authenticator(AuthSettings settings, MungeDecoder* munge, UserDirectory* users,
                std::function<std::time_t()> clock = [] { return std::time(nullptr); })
      : settings_(std::move(settings)), munge_(munge), users_(users), clock_(std::move(clock)) {}
  AuthResult authenticate(std::string_view authorization) const;
  // A munge credential that carries a payload (a request's whole body): who made it, and the
  // payload, which only its maker can have put there.
  struct SignedPayload {
    AuthResult who;
    std::string payload;
  };
  SignedPayload open_munge_payload(std::string_view credential) const;

 private:
  AuthResult for_user(std::optional<UserRecord> user, const std::string& method, const std::string& who) const;
  AuthSettings settings_;
  MungeDecoder* munge_;
  UserDirectory* users_;
  std::function<std::time_t()> clock_;
};

}  // namespace safe
