// The libmunge boundary: decoding a credential (munged checks signature, expiry and replay, and
// says which uid made it) and making one for a request of this process.
#include <munge.h>

#include <cstdlib>

#include "common/authenticator.hpp"

namespace safe {

MungeDecoder::Result LibMungeDecoder::decode(const std::string& credential) {
  uid_t uid = 0;
  gid_t gid = 0;
  void* payload = nullptr;
  int len = 0;
  munge_err_t err = munge_decode(credential.c_str(), nullptr, &payload, &len, &uid, &gid);
  if (payload) std::free(payload);
  if (err != EMUNGE_SUCCESS) return {std::nullopt, munge_strerror(err)};
  return {uid, ""};
}

Result<std::string> new_munge_credential() {
  char* cred = nullptr;
  munge_err_t err = munge_encode(&cred, nullptr, nullptr, 0);
  if (err != EMUNGE_SUCCESS) {
    if (cred) std::free(cred);
    return Error{std::string("cannot make a munge credential: ") + munge_strerror(err) + " (is munged running?)"};
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

}  // namespace safe
