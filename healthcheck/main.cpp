// safe-healthcheck: SaFE's node health checker. One run per call (Slurm HealthCheckProgram, cron),
// or --watch to run as the node agent. See docs/health.md.
#include <signal.h>
#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include "common/systemd_notify.hpp"
#include "healthcheck/gpu_backend.hpp"
#include "healthcheck/gpu_collector.hpp"
#include "healthcheck/gpu_grid_sender.hpp"
#include "healthcheck/health_run.hpp"
#include "healthcheck/kube_mark.hpp"
#include "healthcheck/hwloc_numa.hpp"
#include "healthcheck/node_setup.hpp"
#include "healthcheck/nvml_backend.hpp"

namespace po = boost::program_options;

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_wake{false};

void on_signal(int) { g_stop = true; }

// Detached check threads may still hang in the kernel: end without running destructors.
[[noreturn]] void finish(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(code);
}

void print(const safe::RunReport& report, bool json) {
  if (json) std::cout << safe::report_json(report);
  else std::cout << safe::summary_line(report) << "\n";
  std::cout.flush();
  // slurmd discards HealthCheckProgram's output: whatever changes the node, and a history that
  // cannot be saved, also goes to syslog.
  if (report.decision.action != safe::NodeAction::none || !report.action_ok || !report.state_error.empty())
    syslog(report.action_ok && report.state_error.empty() ? LOG_WARNING : LOG_ERR, "%s",
           safe::summary_line(report).c_str());
}

// The agent's NVML XID listener: a critical XID wakes the loop for an immediate run (the kernel
// log check then sees the XID). Runs in-process on its own thread; if NVML hangs here only this
// thread hangs, the periodic runs go on.
void start_xid_listener() {
  std::thread([] {
    auto api = safe::load_nvml_api();
    if (!api) return;
    safe::Status listened = safe::listen_for_xids(
        *api,
        [](int gpu, unsigned long long xid) {
          std::cerr << "safe-healthcheck: NVIDIA XID " << xid << " on gpu" << gpu << ": running the checks now\n";
          g_wake = true;
        },
        [] { return g_stop.load(); });
    if (!listened)
      std::cerr << "safe-healthcheck: XID events unavailable (" << listened.error() << "); the kernel log check still sees XIDs\n";
  }).detach();
}

// After a periodic Slurm run has acted and reported: the node's GPU grid to safed, for the web
// console. Not the startup run's: slurmd waits for it before it registers.
void send_grid(const safe::RunReport& report, const safe::SafeConfig& config) {
  if (report.status == "not-run" || report.startup_run) return;
  auto url = safe::gpu_grid_url(config);
  safe::Status sent = url ? safe::send_gpu_grid(*url, {report.node, report.time, report.gpu_backend, report.gpus})
                          : safe::Status(safe::Error{"cannot find safed: " + url.error()});
  if (!sent) std::cerr << "safe-healthcheck: " << report.node << ": GPU grid not sent to safed: " << sent.error() << "\n";
}

// --kube: carry out the run's verdict on the Kubernetes node with safe-kube-node (installed beside
// this program), whose client the REST bridge also uses.
void apply_kube_mark(const safe::RunReport& report, const safe::RunOptions& options, safe::ProcessRunner& runner) {
  safe::KubeMarkDecision decision = safe::decide_kube_mark(report.verdict);
  std::string dir = options.self_exe.substr(0, options.self_exe.find_last_of('/') + 1);
  auto argv = safe::kube_mark_command(dir + "safe-kube-node", options.node, decision);
  if (argv.empty()) return;
  safe::ProcessResult result = runner.run(argv, std::chrono::seconds(options.config.health.slurm_timeout_s));
  if (!result.ok())
    std::cerr << "safe-healthcheck: " << argv[1] << " of Kubernetes node " << options.node << " failed ("
              << result.err << result.error << "); check the agent's RBAC and API server access\n";
  else
    syslog(LOG_WARNING, "%s", (argv[1] + " Kubernetes node " + options.node + " " + decision.reason).c_str());
}

int run(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == safe::kGpuSnapshotChildFlag)
    return safe::gpu_snapshot_child_main({argv + 2, argv + argc});
  openlog("safe-healthcheck", LOG_PID, LOG_DAEMON);

  po::options_description opts(
      "usage: safe-healthcheck [OPTIONS]\n\n"
      "Checks this node's GPUs and host, drains it in Slurm on critical faults (reason \"SaFE: ...\")\n"
      "and resumes only its own drains once the checks pass again. Exit codes: 0 healthy, 1 critical\n"
      "failure, 2 usage or config error, 3 warnings only (node suspect), 4 not run (another run holds\n"
      "the lock, or the state directory is unusable).\n\noptions");
  opts.add_options()("help,h", "show this help")(
      "config", po::value<std::string>(), "safe.yaml (default: $SAFE_CONFIG, else /etc/safe/safe.yaml)")(
      "node", po::value<std::string>(), "this node's Slurm name (default: $SLURMD_NODENAME, health.node_name, host name)")(
      "json", "print the run as JSON instead of one summary line")(
      "watch", "run as the node agent: every health.interval_s plus up to health.jitter_s")(
      "no-slurm", "check and report only; never call scontrol")(
      "kube", "Kubernetes node: no Slurm; mark the node unhealthy (label and NoSchedule taint, through "
              "safe-kube-node) instead of draining it, and clear the mark once it has recovered")(
      "startup", "treat this as the startup run: record results, do not call the controller")(
      "print-numa-map", "print this node's GPU -> NUMA map (a health.numa_reference file) and exit")(
      "root", po::value<std::string>()->default_value("/"), "read /proc, /sys and /dev under this directory (tests)");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, opts), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "safe-healthcheck: " << e.what() << " (see safe-healthcheck --help)\n";
    return safe::kExitUsage;
  }
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  // Before any thread starts: this sets environment variables.
  int slurmd = safe::slurmd_pid(safe::NodeFs("/"), getppid());
  safe::adopt_slurmd_environment(safe::NodeFs("/"), slurmd);
  bool explicit_config = vm.count("config") > 0;
  std::string config_path = explicit_config ? vm["config"].as<std::string>() : safe::node_config_path(explicit_config);
  auto config = safe::load_node_config(config_path, explicit_config);
  if (!config) {
    std::cerr << "safe-healthcheck: " << config.error() << " (fix the file; safectl config check " << config_path << ")\n";
    return safe::kExitUsage;
  }
  safe::RunOptions options;
  options.config = *config;
  options.config_path = config_path;
  options.fs = safe::NodeFs(vm["root"].as<std::string>());
  options.node = safe::resolve_node_name(vm.count("node") ? vm["node"].as<std::string>() : "", std::getenv("SLURMD_NODENAME"),
                                         config->health.node_name, safe::host_name());
  options.self_exe = safe::self_executable();
  const bool kube = vm.count("kube") > 0;
  options.use_slurm = !vm.count("no-slurm") && !kube;
  options.force_startup = vm.count("startup") > 0;
  options.slurmd_instance = safe::slurmd_instance(safe::NodeFs("/"), getppid());

  if (vm.count("print-numa-map")) {
    safe::SystemProcessRunner runner;
    safe::Result<safe::NumaMap> map = safe::Error{"no GPU backend"};
    if (config->health.backend == safe::GpuBackendKind::sim) {
      safe::GpuQuery q = safe::query_gpus(runner, {options.self_exe, config_path, options.node, options.fs.root()},
                                          std::chrono::seconds(config->health.check_timeout_s));
      if (q.outcome == safe::GpuQuery::Outcome::ok) map = safe::numa_map_from_snapshot(q.snapshot);
      else map = safe::Error{q.detail};
    } else {
      map = safe::hwloc_gpu_numa_map();
    }
    if (!map) {
      std::cerr << "safe-healthcheck: cannot read the GPU topology: " << map.error() << "\n";
      return 1;
    }
    std::cout << safe::format_numa_map(*map);
    return 0;
  }

  safe::SystemProcessRunner runner;
  safe::ScontrolNodeControl slurm(runner, std::chrono::seconds(config->health.slurm_timeout_s));
  bool json = vm.count("json") > 0;
  if (!vm.count("watch")) {
    safe::RunReport report = safe::run_health_once(options, runner, slurm);
    if (kube) apply_kube_mark(report, options, runner);
    print(report, json);
    if (options.use_slurm) send_grid(report, *config);
    if (report.status == "not-run") std::cerr << "safe-healthcheck: " << report.error << "\n";
    return report.exit_code;
  }

  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  auto kind = config->health.backend == safe::GpuBackendKind::auto_detect ? safe::detect_gpu_backend(options.fs)
                                                                           : std::optional(config->health.backend);
  if (kind == safe::GpuBackendKind::nvml) start_xid_listener();
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> jitter_ms(0, config->health.jitter_s * 1000);
  // The agent is not run by slurmd: its first run may call the controller.
  options.slurmd_instance.clear();
  // Under systemd (safe-healthcheck.service, Type=notify): started once the config is read.
  const auto systemd = safe::SystemdNotifier::from_environment(getpid());
  if (auto ready = systemd.notify("READY=1"); !ready) std::cerr << "safe-healthcheck: " << ready.error() << "\n";
  // Spread the first run too, so a rack that boots together does not hit slurmctld together.
  int wait_ms = jitter_ms(random);
  for (;;) {
    for (int waited = 0; waited < wait_ms && !g_stop && !g_wake; waited += 100)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (g_stop) break;
    g_wake = false;
    safe::RunReport report = safe::run_health_once(options, runner, slurm);
    if (kube) apply_kube_mark(report, options, runner);
    print(report, json);
    if (options.use_slurm) send_grid(report, *config);
    wait_ms = config->health.interval_s * 1000 + jitter_ms(random);
  }
  (void)systemd.notify("STOPPING=1");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    finish(run(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "safe-healthcheck: internal error: " << e.what() << " (please report it)\n";
  } catch (...) {
    std::cerr << "safe-healthcheck: internal error (please report it)\n";
  }
  finish(safe::kExitUsage);
}
