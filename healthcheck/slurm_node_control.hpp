// The node programs' only calls to Slurm: read a node's state and reason, drain it, resume it;
// and for the prolog, requeue or cancel the job it refuses without draining the node. Each is
// `scontrol` (or `scancel`) in a child process with a hard timeout (SLURM_CONF from the
// environment selects the cluster); unit tests use a fake ProcessRunner.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/process_runner.hpp"
#include "common/slurm_node_status.hpp"

namespace safe {

class SlurmNodeControl {
 public:
  virtual ~SlurmNodeControl() = default;
  // nullopt (and `error`) when the read fails or times out: the caller must then not act.
  virtual std::optional<NodeStatus> read(const std::string& node, std::string& error) = 0;
  virtual bool drain(const std::string& node, const std::string& reason, std::string& error) = 0;
  virtual bool resume(const std::string& node, std::string& error) = 0;
  virtual bool requeue_job(const std::string& job_id, std::string& error) = 0;
  virtual bool cancel_job(const std::string& job_id, std::string& error) = 0;
};

class ScontrolNodeControl : public SlurmNodeControl {
 public:
  ScontrolNodeControl(ProcessRunner& runner, std::chrono::milliseconds timeout, std::string scontrol = "scontrol")
      : runner_(runner), timeout_(timeout), scontrol_(std::move(scontrol)) {}
  std::optional<NodeStatus> read(const std::string& node, std::string& error) override;
  bool drain(const std::string& node, const std::string& reason, std::string& error) override;
  bool resume(const std::string& node, std::string& error) override;
  bool requeue_job(const std::string& job_id, std::string& error) override;
  bool cancel_job(const std::string& job_id, std::string& error) override;

 private:
  bool run(const std::vector<std::string>& argv, std::string& error);
  bool update(const std::vector<std::string>& args, std::string& error);
  ProcessRunner& runner_;
  std::chrono::milliseconds timeout_;
  std::string scontrol_;
};

}  // namespace safe
