// safectl: the admin's and user's command line for SaFE.
#include <boost/program_options/errors.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "controller/safectl/commands.hpp"

namespace {

constexpr const char* kUsage =
    "usage: safectl COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  config check [FILE]   validate a safe.yaml (default $SAFE_CONFIG or /etc/safe/safe.yaml)\n"
    "  inject --node N --gpu I --fault F   simulate a GPU fault (sim backend only)\n"
    "  render-slurm          print the slurm.conf and plugstack.conf lines SaFE needs\n"
    "  status                nodes and their health, quarantines, workspaces (from safed)\n"
    "  jobs [--all]          SaFE jobs with attempts and last failure\n"
    "  job ID                one job's history: attempts, classifications, evidence, actions\n"
    "  node release NAME     end a node's quarantine\n"
    "  doctor [--node NAME]  check this host's installation end to end; each failure says what to do\n"
    "  (status, jobs, job and node release take --json; without safed they read Slurm directly)\n"
    "\n"
    "Run 'safectl COMMAND --help' for a command's options.\n";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? 2 : 0;
  }
  try {
    if (args.size() >= 2 && args[0] == "config" && args[1] == "check")
      return safe::ctl::config_check({args.begin() + 2, args.end()});
    if (args[0] == "inject") return safe::ctl::inject({args.begin() + 1, args.end()});
    if (args[0] == "render-slurm") return safe::ctl::render_slurm({args.begin() + 1, args.end()});
    if (args[0] == "status") return safe::ctl::status({args.begin() + 1, args.end()});
    if (args[0] == "jobs") return safe::ctl::jobs({args.begin() + 1, args.end()});
    if (args[0] == "job") return safe::ctl::job({args.begin() + 1, args.end()});
    if (args[0] == "doctor") return safe::ctl::doctor({args.begin() + 1, args.end()});
    if (args.size() >= 2 && args[0] == "node" && args[1] == "release")
      return safe::ctl::node_release({args.begin() + 2, args.end()});
  } catch (const boost::program_options::error& e) {
    std::cerr << "safectl: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "safectl: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "safectl: unknown command '" << args[0] << (args.size() > 1 ? " " + args[1] : "") << "'\n\n" << kUsage;
  return 2;
}
