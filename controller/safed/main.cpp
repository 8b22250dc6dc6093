// safed: SaFE's controller, a sidecar daemon beside slurmctld. Polls Slurm, hands each complete
// view to the FailoverPlanner, probes the slurmd of nodes running SaFE jobs on a thread of its
// own (DeadNodeDetector), and serves /metrics and /api/v1 on controller.listen. SIGHUP reloads
// safe.yaml (a broken file keeps the old config), SIGTERM/SIGINT stop it cleanly.
#include <httplib.h>
#include <sys/stat.h>

#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <thread>

#include "common/config.hpp"
#include "controller/safed/dead_node_detector.hpp"
#include "controller/safed/failover_planner.hpp"
#include "controller/safed/job_files.hpp"
#include "controller/safed/libslurm_client.hpp"
#include "controller/safed/slurmd_prober.hpp"
#include "controller/safed/state_store.hpp"
#include "controller/safed/status_report.hpp"

namespace po = boost::program_options;

namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool> g_reload{false};

void on_signal(int signo) {
  if (signo == SIGHUP) g_reload = true;
  else g_stop = true;
}

long long now_s() { return static_cast<long long>(std::time(nullptr)); }

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sleeps until `until` or until safed stops.
void sleep_until(std::chrono::steady_clock::time_point until) {
  while (!g_stop && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(50), until - std::chrono::steady_clock::now()));
}

void log_line(const std::string& line) {
  char stamp[32];
  std::time_t t = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", std::gmtime(&t));
  std::cerr << stamp << " " << line << std::endl;
}

bool split_listen(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) return false;
  host = listen.substr(0, colon);
  try {
    port = std::stoi(listen.substr(colon + 1));
  } catch (...) {
    return false;
  }
  return port > 0 && port < 65536;
}

struct Settings {
  std::string config_path, listen, state_dir;
};

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
  Settings s;
  s.config_path = vm.count("config") ? vm["config"].as<std::string>() : safe::config_path_from_env();
  safe::ConfigResult loaded = safe::load_config_file(s.config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::cerr << e.to_string() << "\n";
    std::cerr << "safed: cannot start: fix " << s.config_path << " (safectl config check " << s.config_path << ")\n";
    return 1;
  }
  safe::SafeConfig config = *loaded.config;
  s.listen = vm.count("listen") ? vm["listen"].as<std::string>() : config.controller.listen;
  s.state_dir = vm.count("state-dir") ? vm["state-dir"].as<std::string>() : config.controller.state_dir;
  std::string host;
  int port = 0;
  if (!split_listen(s.listen, host, port)) {
    std::cerr << "safed: bad listen address '" << s.listen << "'; expected HOST:PORT\n";
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(s.state_dir, ec);
  std::string db_path = s.state_dir + "/safed.sqlite";

  try {
    safe::StateStore store(db_path);
    safe::StateStore read_store(db_path);  // the HTTP thread's own connection (WAL: readers do not block)
    auto slurm = safe::make_libslurm_client();
    safe::LocalJobFiles files(config.health.state_dir + "/evidence");
    safe::FailoverPlanner planner(config, *slurm, store, files);
    safe::DeadNodeDetector detector(*slurm, store);
    safe::ControllerHealth health;
    health.started = now_s();
    std::mutex mutex;  // guards planner, detector, health, the store, and every libslurm call

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGHUP, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);

    httplib::Server http;
    http.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mutex);
      res.set_content(safe::render_metrics(planner, health, now_s()), "text/plain; version=0.0.4");
    });
    http.Get("/api/v1/status", [&](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mutex);
      res.set_content(safe::render_status_json(planner, health, now_s()), "application/json");
    });
    http.Get("/api/v1/jobs", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mutex);
      res.set_content(safe::render_jobs_json(read_store, req.has_param("all")), "application/json");
    });
    http.Get(R"(/api/v1/jobs/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mutex);
      std::string body = safe::render_job_json(read_store, static_cast<std::uint32_t>(std::stoul(req.matches[1])));
      if (body.empty()) {
        res.status = 404;
        res.set_content("{\"error\": \"safed: no SaFE job with that id in the state store\"}\n", "application/json");
        return;
      }
      res.set_content(body, "application/json");
    });
    http.Post(R"(/api/v1/nodes/([A-Za-z0-9_.-]+)/release)", [&](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mutex);
      std::string err = planner.release_node(req.matches[1], now_s());
      for (const auto& line : planner.take_log()) log_line(line);
      res.status = err.empty() ? 200 : 409;
      res.set_content(err.empty() ? "{\"released\": true}\n" : "{\"error\": \"" + err + "\"}\n", "application/json");
    });
    if (!http.bind_to_port(host.c_str(), port)) {
      std::cerr << "safed: cannot listen on " << s.listen << " (in use?); set controller.listen or --listen\n";
      return 1;
    }
    std::thread http_thread([&] { http.listen_after_bind(); });
    // The probes wait on sockets without the lock: a round of slow probes never holds up a
    // reconcile pass, and the lock is taken only to pick the targets and to act on the results.
    std::thread probe_thread([&] {
      while (!g_stop) {
        safe::SlurmdProbeConfig probe;
        std::vector<safe::ProbeTarget> targets;
        {
          std::lock_guard lock(mutex);
          probe = planner.config().controller.slurmd_probe;
          if (probe.interval_ms > 0 && health.slurm_ok) targets = detector.targets(planner);
        }
        auto round_start = std::chrono::steady_clock::now();
        if (!targets.empty()) {
          auto results = safe::probe_slurmds(targets, probe.timeout_ms, probe.max_in_flight);
          std::lock_guard lock(mutex);
          try {
            detector.apply(results, planner, {probe.failures, 2}, wall_ms());
          } catch (const std::exception& e) {
            log_line(std::string("safed: slurmd probe round failed: ") + e.what());
          }
          planner.set_unanswered_nodes(detector.unanswered());
          for (const auto& line : detector.take_log()) log_line(line);
          health.probe_targets = targets.size();
          health.probe_round_ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - round_start).count();
          health.nodes_downed = detector.downed();
          health.nodes_resumed = detector.resumed();
        }
        sleep_until(round_start + std::chrono::milliseconds(probe.interval_ms > 0 ? probe.interval_ms : 1000));
      }
    });
    log_line("safed: started; config " + s.config_path + ", state " + db_path + ", listening on " + s.listen);
    if (host != "localhost" && host.rfind("127.", 0) != 0 && host != "::1" && host != "[::1]")
      log_line("safed: warning: " + s.listen + " is not a loopback address and the API has no authentication; "
               "bind controller.listen to 127.0.0.1 and put an authenticating proxy in front (docs/controller.md)");

    int failures = 0;
    auto next = std::chrono::steady_clock::now();
    long long licenses_at = 0;
    while (!g_stop) {
      if (g_reload.exchange(false)) {
        safe::ConfigResult fresh = safe::load_config_file(s.config_path);
        std::lock_guard lock(mutex);
        if (fresh.ok()) {
          planner.set_config(*fresh.config);
          log_line("safed: reloaded " + s.config_path);
        } else {
          log_line("safed: kept the previous config: " + s.config_path + " has errors (first: " +
                   fresh.errors.front().to_string() + "); fix it and send SIGHUP again");
        }
      }
      {
        std::lock_guard lock(mutex);
        auto t0 = std::chrono::steady_clock::now();
        std::string error;
        auto nodes = slurm->load_nodes(error);
        auto jobs = nodes ? slurm->load_jobs(error) : std::nullopt;
        if (!nodes || !jobs) {
          // Never act on partial data: wait, with growing pauses, until both lists load.
          if (failures == 0 || health.slurm_error != error)
            log_line("safed: " + error + "; retrying (no action until Slurm answers)");
          health.slurm_ok = false;
          health.slurm_error = error;
          ++failures;
        } else {
          if (failures) log_line("safed: Slurm reachable again");
          failures = 0;
          health.slurm_ok = true;
          health.slurm_error.clear();
          long long now = now_s();
          try {
            planner.reconcile(*jobs, *nodes, now);
          } catch (const std::exception& e) {
            log_line(std::string("safed: reconcile pass failed: ") + e.what());
          }
          if (now - licenses_at >= 10) {
            std::string lic_error;
            if (auto lic = slurm->load_licenses(lic_error)) health.licenses = *lic;
            licenses_at = now;
          }
          health.last_pass = now;
          health.last_pass_ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
        for (const auto& line : planner.take_log()) log_line(line);
      }
      int delay_ms = planner.config().controller.poll_interval_ms;
      if (failures) delay_ms = std::min(30000, delay_ms << std::min(failures, 5));
      next += std::chrono::milliseconds(delay_ms);
      auto now = std::chrono::steady_clock::now();
      if (next < now) next = now;
      while (!g_stop && !g_reload && std::chrono::steady_clock::now() < next)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    log_line("safed: stopping");
    probe_thread.join();
    http.stop();
    http_thread.join();
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
