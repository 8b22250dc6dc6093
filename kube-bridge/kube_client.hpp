// The Kubernetes API as the bridge uses it: plain HTTP requests and watch streams against the
// API server. A seam: the real client is libcurl (kube_client_curl.cpp); tests run it against
// the Kubernetes API double (tests/kube/kube_api_double.py).
#pragma once

#include <cctype>
#include <functional>
#include <stop_token>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace safe::bridge {

// Percent-encodes one piece of an API URL (a name in a path, a query value).
inline std::string url_escape(std::string_view s) {
  std::string out;
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') out += static_cast<char>(c);
    else out += std::string("%") + hex[c >> 4] + hex[c & 15];
  }
  return out;
}

struct KubeResponse {
  int status = 0;     // HTTP status; 0: no answer (connection, TLS or timeout), see `error`
  std::string body;
  std::string error;
};

class KubeClient {
 public:
  virtual ~KubeClient() = default;
  // `path` starts with /api or /apis and may carry a query.
  virtual KubeResponse request(const std::string& method, const std::string& path, const std::string& body = "",
                               const std::string& content_type = "application/json") = 0;
  // GET `path` (a ?watch=1 URL) and hand each line of the stream to `on_line` until the server
  // closes it, `on_line` returns false, `stop` is requested (within about a second, even while
  // the stream is idle), or the connection fails. The status is the response's.
  virtual KubeResponse watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                             std::stop_token stop) = 0;
};

// Where the API server is and how to authenticate.
struct KubeConnection {
  std::string server;       // https://host:6443
  std::string token;        // bearer token
  std::string ca_file;      // PEM bundle to verify the server; empty: system CAs
  std::string client_cert;  // PEM files for client-certificate authentication
  std::string client_key;
  bool insecure = false;    // insecure-skip-tls-verify
};

// The current context of a kubeconfig file (server, token or token-file, client certificate,
// CA; inline *-data fields are written to files under `scratch_dir`).
Result<KubeConnection> load_kubeconfig(const std::string& path, const std::string& scratch_dir);
// The pod's service account (KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/...).
Result<KubeConnection> in_cluster_connection();

}  // namespace safe::bridge
