// The two programs around each job: safe-prolog (gate the job's GPUs before it starts) and
// safe-epilog (quick check, stray cleanup and evidence after it ends). Both are bounded by
// health.gate_timeout_s (GPU query) and health.slurm_timeout_s (each scontrol call).
#pragma once

#include <functional>
#include <map>
#include <ostream>
#include <string>

#include "common/config.hpp"
#include "common/node_fs.hpp"
#include "common/process_runner.hpp"
#include "common/slurm/node_control.hpp"

namespace safe {

struct GateOptions {
  SafeConfig config;
  std::string config_path;
  std::string node;
  std::string self_exe;
  NodeFs fs;
  std::map<std::string, std::string> env;  // the prolog/epilog environment Slurm set
  bool use_slurm = true;
};

// Kills `pid` if it still belongs to `uid` (kill_if_owned); true when it did.
using KillFunction = std::function<bool(int pid, long long uid)>;

// 0: the job may start, or only its own --safe-health=strict refused the GPUs (warnings): the
// prolog then requeues the job (cancels an interactive one) itself and leaves the node in
// service. 1: a GPU of the job has a critical fault; the node was drained ("SaFE: ...") unless its
// reason belongs to someone else, and Slurm requeues the job (SchedulerParameters=nohold_on_prolog_fail).
int run_prolog(const GateOptions& options, ProcessRunner& runner, SlurmNodeControl& slurm, std::ostream& log);

// Always 0 (a failing epilog would make Slurm drain the node with its own reason); problems are
// handled here: drain with a SaFE reason, kill strays, write evidence.
int run_epilog(const GateOptions& options, ProcessRunner& runner, SlurmNodeControl& slurm, std::ostream& log,
               const KillFunction& kill_process);

std::map<std::string, std::string> environment_map(char** envp);

}  // namespace safe
