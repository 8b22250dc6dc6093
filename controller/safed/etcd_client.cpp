#include "controller/safed/etcd_client.hpp"

#include <curl/curl.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

#include "common/base64.hpp"
#include "common/json_value.hpp"

namespace safe {
namespace {

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  if (body->size() + size * n > (8u << 20)) return 0;  // a few journal entries at most
  body->append(data, size * n);
  return size * n;
}


// A 64-bit number as the gateway writes it: a string of digits; absent is proto3's zero.
Result<long long> int_field(const json_t* object, const char* key) {
  const json_t* v = json_object_get(object, key);
  if (!v) return 0LL;
  if (json_is_integer(v)) return static_cast<long long>(json_integer_value(v));
  if (!json_is_string(v)) return Error{std::string("etcd's answer has a non-number ") + key};
  const char* s = json_string_value(v);
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(s, &end, 10);
  if (errno || end == s || *end) return Error{std::string("etcd's answer has a bad ") + key + ": " + s};
  return n;
}

// The gateway's own error: {"error": "...", "code": N, "message": "..."}.
std::string gateway_error(const json_t* j) {
  std::string message = json_string_or(j, "message", json_string_or(j, "error"));
  return message;
}

}  // namespace

Result<Json> parse_etcd_answer(const std::string& answer) {
  json_error_t err;
  Json j = json_take(json_loads(answer.c_str(), 0, &err));
  if (!j || !json_is_object(j.get())) return Error{"etcd's answer is not a JSON object: " + answer.substr(0, 200)};
  return j;
}

EtcdClient::EtcdClient(EtcdEndpoints endpoints) : endpoints_(std::move(endpoints)) {
  static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  (void)initialised;
}

Result<std::string> EtcdClient::post(const std::string& path, const std::string& body) {
  if (endpoints_.urls.empty()) return Error{"no etcd endpoints configured"};
  std::string last_error;
  for (std::size_t i = 0; i < endpoints_.urls.size(); ++i) {
    std::size_t at = (preferred_ + i) % endpoints_.urls.size();
    const std::string url = endpoints_.urls[at] + path;
    std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
    if (!curl) return Error{"cannot initialise libcurl"};
    std::unique_ptr<curl_slist, SlistDeleter> headers(curl_slist_append(nullptr, "Content-Type: application/json"));
    std::string answer;
    CURL* h = curl.get();
    curl_easy_setopt(h, CURLOPT_URL, url.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(endpoints_.timeout_ms));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(endpoints_.timeout_ms));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &answer);
    CURLcode rc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (rc == CURLE_OK && status == 200) {
      preferred_ = at;
      return answer;
    }
    if (rc != CURLE_OK) {
      last_error = endpoints_.urls[at] + ": " + curl_easy_strerror(rc);
    } else {
      auto j = parse_etcd_answer(answer);
      std::string why = j ? gateway_error(j->get()) : answer.substr(0, 200);
      last_error = endpoints_.urls[at] + ": HTTP " + std::to_string(status) + (why.empty() ? "" : ": " + why);
    }
  }
  return Error{last_error};
}

Result<long long> parse_lease_grant(const std::string& answer) {
  auto j = parse_etcd_answer(answer);
  if (!j) return Error{j.error()};
  std::string refused = json_string_or(j->get(), "error");
  if (!refused.empty()) return Error{"etcd refused the lease: " + refused};
  auto id = int_field(j->get(), "ID");
  if (!id) return Error{id.error()};
  if (*id == 0) return Error{"etcd granted no lease: " + answer.substr(0, 200)};
  return *id;
}

Result<long long> parse_keep_alive(const std::string& answer) {
  auto j = parse_etcd_answer(answer);
  if (!j) return Error{j.error()};
  const json_t* result = json_object_get(j->get(), "result");
  if (!json_is_object(result)) {
    std::string why = gateway_error(j->get());
    return Error{"etcd's keep-alive answer has no result" + (why.empty() ? "" : ": " + why)};
  }
  return int_field(result, "TTL");  // absent: 0, the lease is gone
}

Result<LeaderKey> parse_create_if_absent(const std::string& answer, const std::string& value, long long lease) {
  auto j = parse_etcd_answer(answer);
  if (!j) return Error{j.error()};
  if (json_is_true(json_object_get(j->get(), "succeeded"))) {
    auto revision = int_field(json_object_get(j->get(), "header"), "revision");
    if (!revision) return Error{revision.error()};
    return LeaderKey{value, *revision, lease};
  }
  const json_t* responses = json_object_get(j->get(), "responses");
  const json_t* range = json_object_get(json_array_get(responses, 0), "response_range");
  const json_t* kv = json_array_get(json_object_get(range, "kvs"), 0);
  // Gone between the compare and the read: no holder now; the next campaign may create it.
  if (!kv) return LeaderKey{};
  auto token = int_field(kv, "create_revision");
  auto held_by = int_field(kv, "lease");
  if (!token) return Error{token.error()};
  if (!held_by) return Error{held_by.error()};
  auto holder = base64_decode(json_string_or(kv, "value"), Base64::standard);
  return LeaderKey{holder.value_or("?"), *token, *held_by};
}

Result<long long> EtcdClient::grant(long long ttl_s) {
  auto answer = post("/v3/lease/grant", "{\"TTL\":\"" + std::to_string(ttl_s) + "\"}");
  if (!answer) return Error{answer.error()};
  return parse_lease_grant(*answer);
}

Result<long long> EtcdClient::keep_alive(long long lease) {
  auto answer = post("/v3/lease/keepalive", "{\"ID\":\"" + std::to_string(lease) + "\"}");
  if (!answer) return Error{answer.error()};
  return parse_keep_alive(*answer);
}

Status EtcdClient::revoke(long long lease) {
  auto answer = post("/v3/lease/revoke", "{\"ID\":\"" + std::to_string(lease) + "\"}");
  if (!answer) return Error{answer.error()};
  return ok_status();
}

Result<std::optional<std::string>> EtcdClient::read(const std::string& key) {
  auto answer = post("/v3/kv/range", "{\"key\":\"" + base64_encode(key) + "\"}");
  if (!answer) return Error{answer.error()};
  auto j = parse_etcd_answer(*answer);
  if (!j) return Error{j.error()};
  const json_t* kv = json_array_get(json_object_get(j->get(), "kvs"), 0);
  if (!kv) return std::optional<std::string>();
  auto value = base64_decode(json_string_or(kv, "value"), Base64::standard);
  if (!value) return Error{"etcd's answer has a value that is not base64"};
  return std::optional<std::string>(std::move(*value));
}

Status EtcdClient::put(const std::string& key, const std::string& value, long long lease) {
  auto answer = post("/v3/kv/put", "{\"key\":\"" + base64_encode(key) + "\",\"value\":\"" + base64_encode(value) +
                                       "\",\"lease\":\"" + std::to_string(lease) + "\"}");
  if (!answer) return Error{answer.error()};
  return ok_status();
}

Result<std::vector<std::pair<std::string, std::string>>> EtcdClient::list(const std::string& prefix) {
  auto answer = post("/v3/kv/range", "{\"key\":\"" + base64_encode(prefix) + "\",\"range_end\":\"" +
                                         base64_encode(prefix_range_end(prefix)) + "\",\"limit\":\"1000\"}");
  if (!answer) return Error{answer.error()};
  auto j = parse_etcd_answer(*answer);
  if (!j) return Error{j.error()};
  std::vector<std::pair<std::string, std::string>> out;
  std::size_t i;
  const json_t* kv;
  json_array_foreach(json_object_get(j->get(), "kvs"), i, kv) {
    auto key = base64_decode(json_string_or(kv, "key"), Base64::standard);
    auto value = base64_decode(json_string_or(kv, "value"), Base64::standard);
    if (!key || !value) return Error{"etcd's answer has a key or value that is not base64"};
    out.emplace_back(std::move(*key), std::move(*value));
  }
  return out;
}

std::string prefix_range_end(std::string prefix) {
  while (!prefix.empty()) {
    if (static_cast<unsigned char>(prefix.back()) < 0xff) {
      ++prefix.back();
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // etcd's "every key"
}

std::string leader_key(const std::string& prefix) { return prefix + "/leader"; }

Result<std::string> active_controller_url(const HaConfig& ha) {
  EtcdClient etcd({ha.etcd_endpoints, 1000});
  auto url = etcd.read(leader_key(ha.prefix));
  if (!url) return Error{"cannot read " + leader_key(ha.prefix) + " in etcd: " + url.error()};
  if (!*url) return Error{"no safed is active (etcd has no " + leader_key(ha.prefix) + ")"};
  return **url;
}

Result<LeaderKey> EtcdClient::create_if_absent(const std::string& key, const std::string& value, long long lease) {
  std::string k = base64_encode(key);
  std::string body = "{\"compare\":[{\"key\":\"" + k +
                     "\",\"target\":\"CREATE\",\"result\":\"EQUAL\",\"create_revision\":\"0\"}],"
                     "\"success\":[{\"requestPut\":{\"key\":\"" + k + "\",\"value\":\"" + base64_encode(value) +
                     "\",\"lease\":\"" + std::to_string(lease) + "\"}}],"
                     "\"failure\":[{\"requestRange\":{\"key\":\"" + k + "\"}}]}";
  auto answer = post("/v3/kv/txn", body);
  if (!answer) return Error{answer.error()};
  return parse_create_if_absent(*answer, value, lease);
}

}  // namespace safe
