#include "kube-bridge/replica_probe.hpp"

#include <curl/curl.h>

#include <charconv>
#include <cstdlib>
#include <memory>

namespace safe::bridge {
namespace {

struct Transfer {
  CURL* easy = nullptr;
  std::string body;
  bool overflow = false;
};

size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  if (t->body.size() + len > kMaxProbeBodyBytes) {
    t->overflow = true;
    return 0;  // ends the transfer: an answer without end gets no further
  }
  t->body.append(data, len);
  return len;
}

// "[addr]" for an IPv6 address, as URLs need it.
std::string url_host(const std::string& host) { return host.find(':') != std::string::npos ? "[" + host + "]" : host; }

}  // namespace

std::vector<ProbeResult> probe_all(const std::vector<ProbeRequest>& requests, std::chrono::milliseconds deadline) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
  std::vector<ProbeResult> results(requests.size());
  if (requests.empty()) return results;
  std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)> multi(curl_multi_init(), curl_multi_cleanup);
  if (!multi) return results;
  std::vector<Transfer> transfers(requests.size());
  for (std::size_t i = 0; i < requests.size(); ++i) {
    CURL* h = curl_easy_init();
    if (!h) continue;
    transfers[i].easy = h;
    std::string url = "http://" + url_host(requests[i].host) + ":" + std::to_string(requests[i].port) + requests[i].path;
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(deadline.count()));
    curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &transfers[i]);
    curl_easy_setopt(h, CURLOPT_PRIVATE, reinterpret_cast<char*>(i));
    curl_multi_add_handle(multi.get(), h);
  }
  auto end = std::chrono::steady_clock::now() + deadline + std::chrono::milliseconds(100);
  int running = 1;
  while (running > 0 && std::chrono::steady_clock::now() < end) {
    if (curl_multi_perform(multi.get(), &running) != CURLM_OK) break;
    if (running > 0) curl_multi_poll(multi.get(), nullptr, 0, 50, nullptr);
  }
  int left = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi.get(), &left)) {
    if (msg->msg != CURLMSG_DONE) continue;
    char* index = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &index);
    auto i = reinterpret_cast<std::size_t>(index);
    if (msg->data.result != CURLE_OK || transfers[i].overflow) continue;
    results[i].answered = true;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &results[i].status);
    results[i].body = std::move(transfers[i].body);
  }
  for (auto& t : transfers)
    if (t.easy) {
      curl_multi_remove_handle(multi.get(), t.easy);
      curl_easy_cleanup(t.easy);
    }
  return results;
}

std::optional<double> metric_total(std::string_view text, std::string_view metric) {
  std::optional<double> total;
  while (!text.empty()) {
    auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.starts_with(metric) || line.size() == metric.size()) continue;
    std::string_view rest = line.substr(metric.size());
    if (rest[0] == '{') {
      // Label values may hold '}' inside quotes: skip to the closing brace outside them.
      bool quoted = false;
      std::size_t i = 1;
      for (; i < rest.size(); ++i) {
        if (quoted && rest[i] == '\\') ++i;
        else if (rest[i] == '"') quoted = !quoted;
        else if (!quoted && rest[i] == '}') break;
      }
      if (i >= rest.size()) continue;
      rest = rest.substr(i + 1);
    } else if (rest[0] != ' ' && rest[0] != '\t') {
      continue;  // another metric whose name starts with this one
    }
    while (!rest.empty() && (rest[0] == ' ' || rest[0] == '\t')) rest.remove_prefix(1);
    std::string value(rest.substr(0, rest.find_first_of(" \t\r")));
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || v != v) continue;
    total = total.value_or(0) + v;
  }
  return total;
}

}  // namespace safe::bridge
