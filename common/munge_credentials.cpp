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
  std::string carried = payload && len > 0 ? std::string(static_cast<const char*>(payload), static_cast<std::size_t>(len)) : "";
  if (payload) std::free(payload);
  if (err != EMUNGE_SUCCESS) return {std::nullopt, munge_strerror(err)};
  return {uid, "", std::move(carried)};
}

Result<std::string> new_munge_credential(std::string_view payload) {
  char* cred = nullptr;
  munge_err_t err = munge_encode(&cred, nullptr, payload.empty() ? nullptr : payload.data(), static_cast<int>(payload.size()));
  if (err != EMUNGE_SUCCESS) {
    if (cred) std::free(cred);
    return Error{std::string("cannot make a munge credential: ") + munge_strerror(err) + " (is munged running?)"};
  }
  std::string out(cred);
  std::free(cred);
  return out;
}

}  // namespace safe
