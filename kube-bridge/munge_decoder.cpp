// The libmunge boundary: munged checks the credential (signature, expiry, replay) and says
// which uid made it.
#include <munge.h>

#include <cstdlib>

#include "kube-bridge/authenticator.hpp"

namespace safe::bridge {

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

}  // namespace safe::bridge
