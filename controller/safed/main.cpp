// safed: SaFE's controller, a sidecar daemon beside slurmctld. Polls Slurm, hands each complete
// view to the FailoverPlanner, probes the slurmd of nodes running SaFE jobs on a thread of its
// own (DeadNodeDetector), and serves /metrics and /api/v1 on controller.listen. SIGHUP reloads
// safe.yaml (a broken file keeps the old config), SIGTERM/SIGINT stop it cleanly. This file is
// the command line, the config and the signals; safed_daemon.cpp is the rest.
#include <atomic>
#include <boost/program_options.hpp>
#include <csignal>
#include <iostream>

#include "common/config.hpp"
#include "common/daemon_log.hpp"
#include "common/sha256.hpp"
#include "controller/safed/safed_daemon.hpp"

namespace po = boost::program_options;

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};

void on_signal(int signo) {
  if (signo == SIGHUP) g_reload = true;
  else g_stop = true;
}

}  // namespace

int main(int argc, char** argv) {
  po::options_description opts("safed [options]\n\nSaFE controller: failure classification, failover, metrics");
  opts.add_options()("help,h", "show this help")(
      "config", po::value<std::string>(), "safe.yaml (default: $SAFE_CONFIG, else /etc/safe/safe.yaml)")(
      "listen", po::value<std::string>(), "HOST:PORT for /metrics and /api/v1 (overrides controller.listen)")(
      "state-dir", po::value<std::string>(), "SQLite state directory (overrides controller.state_dir)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
  } catch (const po::error& e) {
    std::cerr << "safed: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  safe::SafedSettings s;
  s.config_path = vm.count("config") ? vm["config"].as<std::string>() : safe::config_path_from_env();
  safe::ConfigResult loaded = safe::load_config_file(s.config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) safe::log_line(safe::LogPriority::error, "safed: " + e.to_string());
    safe::log_line(safe::LogPriority::error, "safed: cannot start: fix " + s.config_path + " (safectl config check " +
                                                 s.config_path + ")");
    return 1;
  }
  s.listen = vm.count("listen") ? vm["listen"].as<std::string>() : loaded.config->controller.listen;
  s.state_dir = vm.count("state-dir") ? vm["state-dir"].as<std::string>() : loaded.config->controller.state_dir;
  s.config_sha256 = safe::sha256_hex(loaded.text);

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return safe::run_safed(s, *loaded.config, g_stop, g_reload);
}
