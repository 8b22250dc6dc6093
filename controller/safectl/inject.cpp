// safectl inject: edit the sim backend's per-node file to simulate a GPU fault (or clear it).
// Only for simulated GPUs (health.backend: sim): the local test cluster, the demo, benchmarks.
#include <boost/program_options.hpp>
#include <iostream>

#include "common/config.hpp"
#include "common/sim_gpu_file.hpp"
#include "controller/safectl/commands.hpp"

namespace po = boost::program_options;

namespace safe::ctl {

int inject(const std::vector<std::string>& args) {
  po::options_description opts(
      "safectl inject --node NODE --gpu INDEX --fault ecc|lost|hot|xgmi|pcie|replays|hang|clear\n\n"
      "Simulate a GPU fault on a node of a cluster that uses the sim backend (health.backend: sim):\n"
      "edits <health.sim_dir>/<NODE>.json. ecc: +2 uncorrectable ECC errors; lost: GPU stops\n"
      "answering; hot: above its slowdown temperature; xgmi: a link down; pcie: link width halved;\n"
      "replays: PCIe replays above the limit (a warning: only --safe-health=strict jobs refuse it);\n"
      "hang: the GPU library hangs (whole node); clear: the GPU (or, with --gpu all, the node) healthy.\n\noptions");
  opts.add_options()("help,h", "show this help")("node", po::value<std::string>(), "Slurm node name")(
      "gpu", po::value<std::string>(), "GPU index, or 'all' (clear and hang only)")(
      "fault", po::value<std::string>(), "ecc, lost, hot, xgmi, pcie, replays, hang or clear")(
      "config", po::value<std::string>(), "safe.yaml (default: $SAFE_CONFIG, else /etc/safe/safe.yaml)")(
      "sim-dir", po::value<std::string>(), "override health.sim_dir");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  if (!vm.count("node") || !vm.count("gpu") || !vm.count("fault")) {
    std::cerr << "safectl inject: --node, --gpu and --fault are required (see safectl inject --help)\n";
    return 2;
  }
  auto fault = sim_fault_from_string(vm["fault"].as<std::string>());
  if (!fault) {
    std::cerr << "safectl inject: unknown fault '" << vm["fault"].as<std::string>()
              << "': use ecc, lost, hot, xgmi, pcie, hang or clear\n";
    return 2;
  }
  std::string gpu_text = vm["gpu"].as<std::string>();
  int gpu = -1;
  if (gpu_text != "all") {
    try {
      std::size_t used = 0;
      gpu = std::stoi(gpu_text, &used);
      if (used != gpu_text.size() || gpu < 0) throw std::invalid_argument(gpu_text);
    } catch (const std::exception&) {
      std::cerr << "safectl inject: --gpu expects a GPU index (0, 1, ...) or 'all', got '" << gpu_text << "'\n";
      return 2;
    }
  } else if (*fault != SimFault::clear && *fault != SimFault::hang) {
    std::cerr << "safectl inject: --gpu all works only with --fault clear or hang; name one GPU\n";
    return 2;
  }

  SafeConfig config;
  if (!vm.count("sim-dir")) {
    std::string path = vm.count("config") ? vm["config"].as<std::string>() : config_path_from_env();
    ConfigResult r = load_config_file(path);
    if (!r.ok()) {
      std::cerr << "safectl inject: " << r.errors.front().to_string() << " (or give --sim-dir)\n";
      return 1;
    }
    config = *r.config;
    if (config.health.backend != GpuBackendKind::sim)
      std::cerr << "safectl inject: warning: health.backend is " << to_string(config.health.backend)
                << ", not sim: the checkers on this cluster will not read what this writes\n";
  }
  std::string dir = vm.count("sim-dir") ? vm["sim-dir"].as<std::string>() : config.health.sim_dir;
  std::string path = sim_file_path(dir, vm["node"].as<std::string>());
  int default_gpus = config.health.expected_gpus > 0 ? config.health.expected_gpus : 8;
  auto snapshot = load_sim_file(path, default_gpus);
  if (!snapshot) {
    std::cerr << "safectl inject: " << snapshot.error() << " (fix or delete the file)\n";
    return 1;
  }
  if (Status applied = apply_sim_fault(*snapshot, gpu, *fault); !applied) {
    std::cerr << "safectl inject: " << applied.error() << "\n";
    return 1;
  }
  if (Status saved = save_sim_file(path, *snapshot); !saved) {
    std::cerr << "safectl inject: cannot write " << saved.error() << "\n";
    return 1;
  }
  std::cout << "safectl: " << vm["node"].as<std::string>() << " gpu " << gpu_text << ": " << to_string(*fault)
            << " (simulated, " << path << ")\n";
  return 0;
}

}  // namespace safe::ctl
