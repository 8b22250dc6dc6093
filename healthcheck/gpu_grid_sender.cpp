#include "healthcheck/gpu_grid_sender.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <memory>

#include "common/authenticator.hpp"
#include "controller/safed/etcd_client.hpp"

namespace safe {
namespace {

size_t keep_short(char* data, size_t size, size_t n, void* out) {
  auto* s = static_cast<std::string*>(out);
  if (s->size() < 512) s->append(data, std::min<size_t>(size * n, 512 - s->size()));
  return size * n;
}

}  // namespace

Result<std::string> gpu_grid_url(const SafeConfig& config) {
  if (!config.health.controller_url.empty()) return config.health.controller_url;
  if (config.controller.ha.enabled()) return active_controller_url(config.controller.ha);
  return "http://" + config.controller.listen;
}

Status send_gpu_grid(const std::string& url, const NodeGpuReport& report) {
  // The grid rides inside the credential, not beside it: a credential taken on its way (a process
  // listening where safed should be) can only deliver this grid, once.
  auto body = new_munge_credential(to_json(report));
  if (!body) return Error{"no munge credential: " + body.error()};
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) return Error{"libcurl failed to start"};
  std::string target = url + "/api/v1/nodes/" + report.node + "/gpus", answer;
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(
      curl_slist_append(nullptr, "Content-Type: application/x-munge-credential"), curl_slist_free_all);
  curl_easy_setopt(curl.get(), CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl.get(), CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDS, body->c_str());
  curl_easy_setopt(curl.get(), CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  curl_easy_setopt(curl.get(), CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl.get(), CURLOPT_CONNECTTIMEOUT_MS, 500L);
  curl_easy_setopt(curl.get(), CURLOPT_TIMEOUT_MS, 2000L);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEFUNCTION, keep_short);
  curl_easy_setopt(curl.get(), CURLOPT_WRITEDATA, &answer);
  if (CURLcode rc = curl_easy_perform(curl.get()); rc != CURLE_OK)
    return Error{target + ": " + curl_easy_strerror(rc) + " (health.controller_url: safed as the nodes reach it)"};
  long status = 0;
  curl_easy_getinfo(curl.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) return Error{target + ": HTTP " + std::to_string(status) + " " + answer};
  return ok_status();
}

}  // namespace safe
