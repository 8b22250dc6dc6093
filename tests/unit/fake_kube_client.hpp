// A scripted Kubernetes API for unit tests of the Kubernetes target: each request gets the answer
// of the newest rule whose method matches and whose path starts with the rule's prefix (404
// otherwise), and is recorded. A test can hold requests to one path prefix until it releases
// them, to see what the target does while the API server is slow. No watches: the story tests
// call reconcile themselves (the integration tests run the bridge against the API double).
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "kube-bridge/kube_client.hpp"

namespace safe::bridge::testing {

class FakeKubeClient : public KubeClient {
 public:
  struct Call {
    std::string method, path, body;
  };

  void answer(const std::string& method, const std::string& prefix, int status, const std::string& body = "{}") {
    std::lock_guard lock(mutex_);
    rules_.push_back({method, prefix, {status, body, status == 0 ? "connection reset" : ""}});
  }

  KubeResponse request(const std::string& method, const std::string& path, const std::string& body = "",
                       const std::string& = "application/json") override {
    std::unique_lock lock(mutex_);
    calls_.push_back({method, path, body});
    if (!hold_prefix_.empty() && path.starts_with(hold_prefix_)) {
      ++held_;
      changed_.notify_all();
      changed_.wait(lock, [this] { return hold_prefix_.empty(); });
    }
    for (auto it = rules_.rbegin(); it != rules_.rend(); ++it)
      if (it->method == method && path.starts_with(it->prefix)) return it->response;
    return {404, R"({"kind":"Status","code":404,"message":"not found"})", ""};
  }

  KubeResponse watch(const std::string&, const std::function<bool(std::string_view)>&, std::stop_token) override {
    return {0, "", "no watches in unit tests"};
  }

  // Requests to paths starting with `prefix` wait until release().
  void hold(const std::string& prefix) {
    std::lock_guard lock(mutex_);
    hold_prefix_ = prefix;
    held_ = 0;
  }
  // Waits until a request is being held.
  void wait_held() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return held_ > 0; });
  }
  void release() {
    std::lock_guard lock(mutex_);
    hold_prefix_.clear();
    changed_.notify_all();
  }

  std::vector<Call> calls() {
    std::lock_guard lock(mutex_);
    return calls_;
  }
  // The calls with this method whose path starts with `prefix`.
  std::vector<Call> calls(const std::string& method, const std::string& prefix) {
    std::vector<Call> out;
    for (const Call& c : calls())
      if (c.method == method && c.path.starts_with(prefix)) out.push_back(c);
    return out;
  }
  void forget_calls() {
    std::lock_guard lock(mutex_);
    calls_.clear();
  }

 private:
  struct Rule {
    std::string method, prefix;
    KubeResponse response;
  };
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Rule> rules_;
  std::vector<Call> calls_;
  std::string hold_prefix_;
  int held_ = 0;
};

}  // namespace safe::bridge::testing
