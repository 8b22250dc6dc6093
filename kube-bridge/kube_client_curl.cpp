#include "kube-bridge/kube_client_curl.hpp"

#include <curl/curl.h>

#include <memory>

namespace safe::bridge {
namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

struct Sink {
  std::string body;
  const std::function<bool(std::string_view)>* on_line = nullptr;
  std::string partial;
  bool stopped = false;
  std::stop_token stop;  // a watch's: the transfer ends when a stop is requested
};

// libcurl calls this about once a second even while no byte arrives: a stop needs no traffic.
int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* sink = static_cast<Sink*>(user);
  if (!sink->stop.stop_requested()) return 0;
  sink->stopped = true;
  return 1;
}

size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  size_t len = size * n;
  if (!sink->on_line) {
    if (sink->body.size() + len > (64u << 20)) return 0;  // a runaway answer: abort the transfer
    sink->body.append(data, len);
    return len;
  }
  sink->partial.append(data, len);
  std::size_t pos;
  while ((pos = sink->partial.find('\n')) != std::string::npos) {
    std::string line = sink->partial.substr(0, pos);
    sink->partial.erase(0, pos + 1);
    if (!line.empty() && !(*sink->on_line)(line)) {
      sink->stopped = true;
      return 0;
    }
  }
  if (sink->partial.size() > (16u << 20)) return 0;
  return len;
}

}  // namespace

CurlKubeClient::CurlKubeClient(KubeConnection connection) : c_(std::move(connection)) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
}

static KubeResponse perform(const KubeConnection& c, const std::string& method, const std::string& path,
                            const std::string& body, const std::string& content_type, Sink& sink, bool streaming) {
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) return {0, "", "cannot initialise libcurl"};
  std::string url = c.server + path;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json");
  if (!c.token.empty()) headers = curl_slist_append(headers, ("Authorization: Bearer " + c.token).c_str());
  if (!body.empty() || method == "POST" || method == "PATCH" || method == "PUT")
    headers = curl_slist_append(headers, ("Content-Type: " + content_type).c_str());
  std::unique_ptr<curl_slist, SlistDeleter> header_list(headers);
  CURL* h = curl.get();
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method.c_str());
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
  // A watch stays open until the server ends it (its timeoutSeconds); a request must not hang.
  curl_easy_setopt(h, CURLOPT_TIMEOUT, streaming ? 0L : 30L);
  if (streaming) {
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 600L);
  }
  if (!body.empty() || method == "POST" || method == "PATCH" || method == "PUT") {
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  if (!c.ca_file.empty()) curl_easy_setopt(h, CURLOPT_CAINFO, c.ca_file.c_str());
  if (!c.client_cert.empty()) curl_easy_setopt(h, CURLOPT_SSLCERT, c.client_cert.c_str());
  if (!c.client_key.empty()) curl_easy_setopt(h, CURLOPT_SSLKEY, c.client_key.c_str());
  if (c.insecure) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &sink);
  if (streaming) {
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, &sink);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  }
  CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  KubeResponse r{static_cast<int>(status), std::move(sink.body), ""};
  if (rc != CURLE_OK && !(sink.stopped && (rc == CURLE_WRITE_ERROR || rc == CURLE_ABORTED_BY_CALLBACK))) {
    r.error = std::string(curl_easy_strerror(rc)) + " (" + method + " " + url + ")";
    if (!streaming) r.status = 0;
  }
  return r;
}

KubeResponse CurlKubeClient::request(const std::string& method, const std::string& path, const std::string& body,
                                     const std::string& content_type) {
  Sink sink;
  return perform(c_, method, path, body, content_type, sink, false);
}

KubeResponse CurlKubeClient::watch(const std::string& path, const std::function<bool(std::string_view)>& on_line,
                                   std::stop_token stop) {
  Sink sink;
  sink.on_line = &on_line;
  sink.stop = std::move(stop);
  return perform(c_, "GET", path, "", "", sink, true);
}

}  // namespace safe::bridge
