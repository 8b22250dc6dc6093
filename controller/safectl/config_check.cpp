// safectl config check [FILE]: validate a safe.yaml, print each error or "ok".
#include <boost/program_options.hpp>
#include <iostream>

#include "common/config.hpp"
#include "controller/safectl/commands.hpp"

namespace po = boost::program_options;

namespace safe::ctl {

int config_check(const std::vector<std::string>& args) {
  po::options_description opts("safectl config check [FILE]\n\nValidate FILE (default: $SAFE_CONFIG, else /etc/safe/safe.yaml)");
  opts.add_options()("help,h", "show this help");
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::string>());
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description positional;
  positional.add("file", 1);

  po::variables_map vm;
  po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  std::string path = vm.count("file") ? vm["file"].as<std::string>() : config_path_from_env();
  ConfigResult result = load_config_file(path);
  if (result.ok()) {
    std::cout << "ok\n";
    return 0;
  }
  for (const auto& e : result.errors) std::cout << e.to_string() << "\n";
  std::cout << result.errors.size() << (result.errors.size() == 1 ? " error" : " errors") << " in " << path << "\n";
  return 1;
}

}  // namespace safe::ctl
