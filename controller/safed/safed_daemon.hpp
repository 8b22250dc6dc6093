// safed running: its state store, the Slurm seam, the readers of users' files, the planner, the
// API, the probe thread and the reconcile loop, wired together. main.cpp parses the command line
// and the config and handles the signals; everything after that is here.
#pragma once

#include <atomic>
#include <string>

#include "common/config.hpp"

namespace safe {

struct SafedSettings {
  std::string config_path;  // reread on SIGHUP
  std::string listen;       // HOST:PORT of /metrics and /api/v1
  std::string state_dir;    // SQLite state (--state-dir or controller.state_dir)
  std::string config_sha256;  // of the safe.yaml read at start (the API reports it)
};

// Runs until `stop` is set; `reload` set asks for safe.yaml to be read again. Returns the
// process's exit status (1 when safed cannot start: the reason is on stderr).
int run_safed(const SafedSettings& settings, const SafeConfig& config, const std::atomic<bool>& stop,
              std::atomic<bool>& reload);

}  // namespace safe
