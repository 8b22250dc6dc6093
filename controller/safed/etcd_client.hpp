// The LeaseStore of safed's leadership in etcd, over etcd's v3 JSON gateway (the HTTP face of its
// gRPC API, in every etcd since 3.4: POST /v3/lease/grant, /v3/lease/keepalive,
// /v3/lease/revoke, /v3/kv/txn), with libcurl: no gRPC stack to build or package. Keys and values
// travel base64-encoded, 64-bit numbers as JSON strings.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/json_value.hpp"
#include "controller/safed/leadership.hpp"

namespace safe {

struct EtcdEndpoints {
  std::vector<std::string> urls;  // http://host:2379, tried in order until one answers
  long long timeout_ms = 1000;    // per request: a call must end well inside a lease's TTL
};

class EtcdClient : public LeaseStore {
 public:
  explicit EtcdClient(EtcdEndpoints endpoints);

  Result<long long> grant(long long ttl_s) override;
  Result<long long> keep_alive(long long lease) override;
  Status revoke(long long lease) override;
  Result<LeaderKey> create_if_absent(const std::string& key, const std::string& value, long long lease) override;
  Status put(const std::string& key, const std::string& value, long long lease) override;

  // Every key that starts with `prefix`, with its value, in key order.
  Result<std::vector<std::pair<std::string, std::string>>> list(const std::string& prefix);

  // The value of `key`; nullopt when it does not exist.
  Result<std::optional<std::string>> read(const std::string& key);

  // The answer to a POST of `body` to `path` on the first endpoint that answers (HTTP 200); the
  // last error otherwise. Public for the fenced writes built on it.
  Result<std::string> post(const std::string& path, const std::string& body);

 private:
  EtcdEndpoints endpoints_;
  std::size_t preferred_ = 0;  // the endpoint that answered last
};

// The range_end that makes a range request read every key starting with `prefix` (etcdctl
// --prefix): the prefix with its last byte raised by one.
std::string prefix_range_end(std::string prefix);

// The key the active safed holds, its value the instance's API URL (controller.ha.prefix).
std::string leader_key(const std::string& prefix);
// The API URL of the active safed, as etcd has it: for safectl and the REST bridge.
Result<std::string> active_controller_url(const HaConfig& ha);

// An answer of the gateway as a JSON object, or why it is not one.
Result<Json> parse_etcd_answer(const std::string& answer);

// The parsers of the gateway's answers, apart for the unit tests.
Result<long long> parse_lease_grant(const std::string& answer);
Result<long long> parse_keep_alive(const std::string& answer);
// The answer to create_if_absent's transaction: `lease` is the one the put used.
Result<LeaderKey> parse_create_if_absent(const std::string& answer, const std::string& value, long long lease);

}  // namespace safe
