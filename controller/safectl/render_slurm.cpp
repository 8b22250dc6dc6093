// safectl render-slurm: print or write the slurm.conf and plugstack.conf lines SaFE needs.
#include <sys/stat.h>

#include <boost/program_options.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "common/config.hpp"
#include "common/slurm_fragments.hpp"
#include "controller/safectl/commands.hpp"

namespace po = boost::program_options;

namespace safe::ctl {
namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!(out << text)) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace

int render_slurm(const std::vector<std::string>& args) {
  po::options_description opts(
      "safectl render-slurm [options]\n\n"
      "Print the slurm.conf and plugstack.conf lines SaFE needs, from safe.yaml");
  opts.add_options()("help,h", "show this help")(
      "config", po::value<std::string>(), "safe.yaml to read (default: $SAFE_CONFIG, else /etc/safe/safe.yaml)")(
      "plugin-dir", po::value<std::string>()->default_value(SAFE_SLURM_PLUGIN_DIR),
      "where spank_safe.so and job_submit_safe.so are installed")(
      "sbin-dir", po::value<std::string>()->default_value(SAFE_SBIN_DIR),
      "where safe-healthcheck, safe-prolog and safe-epilog are installed")(
      "plugstack", po::value<std::string>(), "also emit PlugStackConfig=FILE")(
      "out", po::value<std::string>(), "write DIR/slurm-safe.conf and DIR/plugstack-safe.conf instead of printing");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  std::string config_path = vm.count("config") ? vm["config"].as<std::string>() : config_path_from_env();
  ConfigResult config = load_config_file(config_path);
  if (!config.ok()) {
    for (const auto& e : config.errors) std::cerr << e.to_string() << "\n";
    std::cerr << "safectl: fix " << config_path << " first (safectl config check " << config_path << ")\n";
    return 1;
  }
  // Slurm daemons change directory: every path they are given must be absolute.
  FragmentPaths paths{std::filesystem::absolute(config_path).lexically_normal().string(),
                      vm["plugin-dir"].as<std::string>(), vm["sbin-dir"].as<std::string>(),
                      vm.count("plugstack") ? vm["plugstack"].as<std::string>() : ""};
  SlurmFragments fragments = render_slurm_fragments(*config.config, paths);
  if (!vm.count("out")) {
    std::cout << fragments.slurm_conf << "\n" << fragments.plugstack_conf;
    return 0;
  }
  std::string dir = vm["out"].as<std::string>();
  mkdir(dir.c_str(), 0755);
  if (!write_file(dir + "/slurm-safe.conf", fragments.slurm_conf) ||
      !write_file(dir + "/plugstack-safe.conf", fragments.plugstack_conf)) {
    std::cerr << "safectl: cannot write into " << dir << "\n";
    return 1;
  }
  std::cout << "wrote " << dir << "/slurm-safe.conf and " << dir << "/plugstack-safe.conf\n";
  return 0;
}

}  // namespace safe::ctl
