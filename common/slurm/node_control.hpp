// The node programs' only calls to Slurm: read a node's state and reason, drain it, resume it;
// and for the prolog, requeue or cancel the job it refuses without draining the node. Each is
// `scontrol` (or `scancel`) in a child process with a hard timeout (SLURM_CONF from the
// environment selects the cluster); unit tests use a fake ProcessRunner.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/process_runner.hpp"
#include "common/result.hpp"
#include "common/slurm/node_status.hpp"

namespace safe {

class SlurmNodeControl {
 public:
  virtual ~SlurmNodeControl() = default;
  // An error when the read fails or times out: the caller must then not act.
  virtual Result<NodeStatus> read(const std::string& node) = 0;
  virtual Status drain(const std::string& node, const std::string& reason) = 0;
  virtual Status resume(const std::string& node) = 0;
  virtual Status requeue_job(const std::string& job_id) = 0;
  virtual Status cancel_job(const std::string& job_id) = 0;
};

// The scontrol of the Slurm SaFE was built against (cmake/slurm.cmake), by absolute path: slurmd
// runs HealthCheckProgram and Prolog with a bare PATH, and a site with its Slurm under a prefix
// must not get another release's scontrol.
extern const char* const kScontrolPath;

class ScontrolNodeControl : public SlurmNodeControl {
 public:
  ScontrolNodeControl(ProcessRunner& runner, std::chrono::milliseconds timeout, std::string scontrol = kScontrolPath)
      : runner_(runner), timeout_(timeout), scontrol_(std::move(scontrol)) {}
  Result<NodeStatus> read(const std::string& node) override;
  Status drain(const std::string& node, const std::string& reason) override;
  Status resume(const std::string& node) override;
  Status requeue_job(const std::string& job_id) override;
  Status cancel_job(const std::string& job_id) override;

 private:
  Status run(const std::vector<std::string>& argv);
  Status update(const std::vector<std::string>& args);
  ProcessRunner& runner_;
  std::chrono::milliseconds timeout_;
  std::string scontrol_;
};

}  // namespace safe
