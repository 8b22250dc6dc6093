// Test doubles and helpers for the health tests: a scripted ProcessRunner, a recording Slurm
// node control, and fixture trees copied to a temporary directory.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/process_runner.hpp"
#include "healthcheck/slurm_node_control.hpp"

namespace safe::test {

// Answers each run() with a function of argv and records every call.
class FakeProcessRunner : public ProcessRunner {
 public:
  std::function<ProcessResult(const std::vector<std::string>&)> respond;
  std::vector<std::vector<std::string>> calls;
  ProcessResult run(const std::vector<std::string>& argv, std::chrono::milliseconds) override {
    calls.push_back(argv);
    return respond ? respond(argv) : ProcessResult{};
  }
};

inline ProcessResult exited(int code, std::string out, std::string err = {}) {
  ProcessResult r;
  r.outcome = ProcessResult::Outcome::exited;
  r.exit_code = code;
  r.out = std::move(out);
  r.err = std::move(err);
  return r;
}

inline ProcessResult timed_out() {
  ProcessResult r;
  r.outcome = ProcessResult::Outcome::timed_out;
  return r;
}

// A node as slurmctld would keep it: drain/resume change it, every call is recorded.
class FakeSlurm : public SlurmNodeControl {
 public:
  bool readable = true;
  std::string state = "IDLE";
  std::string reason;
  std::vector<std::string> calls;  // "read", "drain:REASON", "resume"
  std::function<void()> on_drain;  // runs as the drain arrives, to look at what was done before it
  Result<NodeStatus> read(const std::string& node) override {
    calls.push_back("read");
    if (!readable) return Error{"scontrol timed out"};
    return NodeStatus{node, state, reason};
  }
  Status drain(const std::string&, const std::string& r) override {
    calls.push_back("drain:" + r);
    if (on_drain) on_drain();
    state = state.find("DRAIN") == std::string::npos ? state + "+DRAIN" : state;
    reason = r;
    return ok_status();
  }
  Status resume(const std::string&) override {
    calls.push_back("resume");
    state = state.substr(0, state.find("+DRAIN"));
    reason.clear();
    return ok_status();
  }
  bool batch = true;  // requeue works for batch jobs only
  Status requeue_job(const std::string& id) override {
    calls.push_back("requeue:" + id);
    if (!batch) return Error{"scontrol requeue " + id + ": Requested operation not supported on this job"};
    return ok_status();
  }
  Status cancel_job(const std::string& id) override {
    calls.push_back("cancel:" + id);
    return ok_status();
  }
  int count(const std::string& prefix) const {
    int n = 0;
    for (const auto& c : calls) n += c.rfind(prefix, 0) == 0;
    return n;
  }
};

// A fresh directory, removed with the test.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "safe-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Copies tests/fixtures/<name> into a TempDir and returns its root.
inline std::string copy_fixture(const TempDir& dir, const std::string& name) {
  std::string to = dir.path() + "/" + name;
  std::filesystem::copy(std::string(SAFE_SOURCE_DIR) + "/tests/fixtures/" + name, to,
                        std::filesystem::copy_options::recursive);
  return to;
}

}  // namespace safe::test
