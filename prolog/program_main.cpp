#include "prolog/program_main.hpp"

#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "healthcheck/gpu_collector.hpp"
#include "healthcheck/node_setup.hpp"
#include "prolog/gate_run.hpp"
#include "prolog/stray_cleanup.hpp"

namespace safe {

int gate_program_main(GateStage stage, int argc, char** argv, char** envp) {
  const char* component = stage == GateStage::prolog ? "safe-prolog" : "safe-epilog";
  // A broken prolog drains the node with Slurm's reason: on our own errors, let the job start.
  int on_error = 0;
  try {
    if (argc >= 2 && std::string(argv[1]) == kGpuSnapshotChildFlag) return gpu_snapshot_child_main({argv + 2, argv + argc});
    adopt_slurmd_environment(NodeFs("/"), slurmd_pid(NodeFs("/"), getppid()));
    bool explicit_config = false;
    std::string config_path = node_config_path(explicit_config);
    std::string node_flag, root = "/";
    bool use_slurm = true;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "--config" && i + 1 < argc) config_path = argv[++i], explicit_config = true;
      else if (a == "--node" && i + 1 < argc) node_flag = argv[++i];
      else if (a == "--root" && i + 1 < argc) root = argv[++i];
      else if (a == "--no-slurm") use_slurm = false;
      else if (a == "--help" || a == "-h") {
        std::cout << "usage: " << component
                  << " [--config FILE] [--node NAME] [--no-slurm]\n"
                     "Run by slurmd as "
                  << (stage == GateStage::prolog ? "Prolog" : "Epilog")
                  << "; reads SLURM_JOB_ID, SLURM_JOB_GPUS, SLURM_JOB_UID and --safe-health from the environment.\n"
                     "See docs/health.md.\n";
        return 0;
      } else {
        std::cerr << component << ": unknown argument '" << a << "' (see " << component << " --help)\n";
        return on_error;
      }
    }
    auto config = load_node_config(config_path, explicit_config);
    if (!config) {
      std::cerr << component << ": " << config.error() << ": skipping the GPU gate (fix the file; safectl config check)\n";
      return on_error;
    }
    GateOptions o;
    o.config = *config;
    o.config_path = config_path;
    o.env = environment_map(envp);
    o.node = resolve_node_name(node_flag, std::getenv("SLURMD_NODENAME"), config->health.node_name, host_name());
    o.self_exe = self_executable();
    o.fs = NodeFs(root);
    o.use_slurm = use_slurm;
    SystemProcessRunner runner;
    ScontrolNodeControl slurm(runner, std::chrono::seconds(config->health.slurm_timeout_s));
    if (stage == GateStage::prolog) return run_prolog(o, runner, slurm, std::cerr);
    return run_epilog(o, runner, slurm, std::cerr, [&o](int pid, long long uid) { return kill_if_owned(o.fs, pid, uid); });
  } catch (const std::exception& e) {
    std::cerr << component << ": internal error: " << e.what() << " (please report it)\n";
  } catch (...) {
    std::cerr << component << ": internal error (please report it)\n";
  }
  return on_error;
}

}  // namespace safe
