// Test doubles and helpers for the health tests: a scripted ProcessRunner and fixture trees copied
// to a temporary directory. Slurm is tests/unit/fake_slurm.hpp, as for every test.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "common/process_runner.hpp"
#include "tests/unit/source_path.hpp"

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
  std::filesystem::copy(safe::test::source_path("tests/fixtures/" + name), to,
                        std::filesystem::copy_options::recursive);
  return to;
}

}  // namespace safe::test
