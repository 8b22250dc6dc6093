#include <curl/curl.h>

#include <chrono>
#include <memory>

#include "common/authenticator.hpp"
#include "kube-bridge/controller_history.hpp"

namespace safe::bridge {
namespace {

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

size_t collect(char* data, size_t size, size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (s->size() + size * n > (8u << 20)) return 0;
  s->append(data, size * n);
  return size * n;
}

}  // namespace

std::optional<std::string> CurlControllerHistory::job_history(std::uint32_t job_id, long long submitted) {
  std::string path = "/api/v1/jobs/" + std::to_string(job_id);
  if (submitted > 0) path += "?submitted=" + std::to_string(submitted);
  return get(path);
}

std::optional<std::string> CurlControllerHistory::failovers(long long since) {
  return get("/api/v1/failovers?since=" + std::to_string(since));
}

std::optional<std::string> CurlControllerHistory::node_faults(const std::string& node, long long since) {
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return std::nullopt;
  std::unique_ptr<char, decltype(&curl_free)> escaped(curl_easy_escape(curl.get(), node.c_str(), static_cast<int>(node.size())),
                                                      curl_free);
  if (!escaped) return std::nullopt;
  return get("/api/v1/node-faults?node=" + std::string(escaped.get()) + "&since=" + std::to_string(since));
}

std::optional<std::string> CurlControllerHistory::workspaces() { return get("/api/v1/workspaces"); }

std::optional<std::string> CurlControllerHistory::ettr_history(long long since, long long step) {
  return get("/api/v1/ettr-history?since=" + std::to_string(since) + "&step=" + std::to_string(step));
}

std::optional<std::string> CurlControllerHistory::node_gpus() { return get("/api/v1/node-gpus"); }

std::optional<std::string> CurlControllerHistory::get(const std::string& path) {
  if (now_ms() < quiet_until_ms_) return std::nullopt;
  std::string base = base_url_();
  if (base.empty()) return std::nullopt;
  auto credential = new_munge_credential();
  if (!credential) return std::nullopt;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return std::nullopt;
  std::string url = base + path, body;
  std::string auth = "Authorization: Munge " + *credential;
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(curl_slist_append(nullptr, auth.c_str()),
                                                                       curl_slist_free_all);
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 200L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 500L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &body);
  long status = 0;
  if (curl_easy_perform(curl.get()) != CURLE_OK) {
    quiet_until_ms_ = now_ms() + 10000;
    return std::nullopt;
  }
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) return std::nullopt;  // a job's 404: safed does not track it
  return body;
}

}  // namespace safe::bridge
