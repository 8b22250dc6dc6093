// KubeClient over libcurl: one easy handle per call (thread-safe without sharing), bearer token
// or client certificate, the cluster's CA.
#pragma once

#include "kube-bridge/kube_client.hpp"

namespace safe::bridge {

class CurlKubeClient : public KubeClient {
 public:
  explicit CurlKubeClient(KubeConnection connection);
  KubeResponse request(const std::string& method, const std::string& path, const std::string& body,
                       const std::string& content_type) override;
  KubeResponse watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                     std::stop_token stop) override;

 private:
  KubeConnection c_;
};

}  // namespace safe::bridge
