// ProcessRunner: run a program with a hard time limit and capture what it prints. Every external
// call SaFE makes from a node (scontrol, the GPU-library child) goes through it, because a hung
// call must never hang slurmd, the prolog or the health checker (NHC issues #161, #9, #95, #104).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace safe {

struct ProcessResult {
  enum class Outcome { exited, signaled, timed_out, failed_to_start };
  Outcome outcome = Outcome::failed_to_start;
  int exit_code = -1;  // when exited
  int signal = 0;      // when signaled
  std::string out;     // stdout, cut at the output limit
  std::string err;     // stderr, cut at the output limit
  std::string error;   // why it failed to start

  bool ok() const { return outcome == Outcome::exited && exit_code == 0; }
  // "exited with 1", "killed after 5000 ms", ... for messages.
  std::string describe() const;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // argv[0] is looked up in PATH. On timeout the whole process group is killed with SIGKILL.
  virtual ProcessResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) = 0;
};

// fork/exec in a new process group; stdin is /dev/null; the environment is inherited.
class SystemProcessRunner : public ProcessRunner {
 public:
  explicit SystemProcessRunner(std::size_t max_output_bytes = 1 << 20) : max_output_(max_output_bytes) {}
  ProcessResult run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override;

 private:
  std::size_t max_output_;
};

}  // namespace safe
