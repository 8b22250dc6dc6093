// safed: SaFE's controller, a sidecar daemon beside slurmctld. Polls Slurm, hands each complete
// view to the FailoverPlanner, probes the slurmd of nodes running SaFE jobs on a thread of its
// own (DeadNodeDetector), and serves /metrics and /api/v1 on controller.listen. SIGHUP reloads
// safe.yaml (a broken file keeps the old config), SIGTERM/SIGINT stop it cleanly.
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

#include "common/authenticator.hpp"
#include "common/config.hpp"
#include "common/http_service.hpp"
#include "common/job_user.hpp"
#include "common/user_directory.hpp"
#include "controller/safed/cluster_shape_publisher.hpp"
#include "controller/safed/controller_api.hpp"
#include "controller/safed/dead_node_detector.hpp"
#include "controller/safed/deadline_reader.hpp"
#include "controller/safed/failover_planner.hpp"
#include "controller/safed/job_files.hpp"
#include "common/slurm/libslurm.hpp"
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
  std::tm tm{};
  gmtime_r(&t, &tm);  // the loop, the probe thread and request handlers all log
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  std::cerr << stamp << " " << line << std::endl;
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
  if (!safe::split_listen_address(s.listen, host, port)) {
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
    // Job files are read on workers with a deadline, never under `mutex` (deadline_reader.hpp).
    safe::DeadlineReader user_reader({}, now_s);
    safe::DeadlineReader evidence_reader({}, now_s);
    safe::AsyncJobFiles files(config.health.state_dir + "/evidence", user_reader, evidence_reader);
    safe::JobUserCache user_cache;
    auto make_planner = [&](const safe::SafeConfig& c) {
      auto p = std::make_unique<safe::FailoverPlanner>(c, *slurm, store, files, slurm->output_pattern_dialect());
      p->set_user_names([&user_cache](std::uint32_t uid) {
        auto user = user_cache.get(uid, std::time(nullptr));
        return user ? user->name : std::to_string(uid);
      });
      return p;
    };
    std::unique_ptr<safe::FailoverPlanner> planner_owner = make_planner(config);
    safe::FailoverPlanner* planner = planner_owner.get();
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

    // The API: munge or Slurm JWT, like the bridge (auth in safe.yaml); each user sees their own.
    safe::AuthSettings auth_settings = safe::auth_settings_from(config.auth);
    if (!config.auth.jwt_key_file.empty()) {
      auto key = safe::read_jwt_key(config.auth.jwt_key_file);
      if (!key) {
        std::cerr << "safed: " << key.error() << "\n";
        return 1;
      }
      auth_settings.jwt_key = *key;
    }
    safe::LibMungeDecoder munge;
    safe::SystemUserDirectory users;
    safe::Authenticator auth(auth_settings, &munge, &users);
    std::mutex read_mutex;  // read_store's one connection, shared by the API's workers
    safe::ControllerApi api(auth, {
        [&] {
          std::lock_guard lock(mutex);
          return safe::render_metrics(*planner, health, now_s());
        },
        [&](std::optional<std::uint32_t> user) {
          std::lock_guard lock(mutex);
          return safe::render_status_json(*planner, health, now_s(), user);
        },
        [&](bool all, std::optional<std::uint32_t> user) {
          std::lock_guard lock(read_mutex);
          return safe::render_jobs_json(read_store, all, user);
        },
        [&](std::uint32_t id, std::optional<long long> submitted, std::optional<std::uint32_t> user) {
          std::lock_guard lock(read_mutex);
          return safe::render_job_json(read_store, id, submitted, user);
        },
        [&](const std::string& node) {
          std::lock_guard lock(mutex);
          safe::Status released = planner->release_node(node, now_s());
          for (const auto& line : planner->take_log()) log_line(line);
          return released;
        },
    });
    safe::raise_open_file_limit();
    safe::HttpServiceSettings http_settings;
    http_settings.host = host;
    http_settings.port = port;
    http_settings.limits.max_body_bytes = 64 << 10;  // no route takes a body
    http_settings.limits.max_connections = 1024;
    http_settings.limits.workers = 4;
    safe::HttpService http(
        http_settings, [&api](const safe::HttpRequest& r) { return api.handle(r); }, safe::ControllerApi::is_inline);
    if (auto started = http.start(); !started) {
      std::cerr << "safed: " << started.error() << "; set controller.listen or --listen\n";
      return 1;
    }
    // The probes wait on sockets without the lock: a round of slow probes never holds up a
    // reconcile pass, and the lock is taken only to pick the targets and to act on the results.
    std::thread probe_thread([&] {
      while (!g_stop) {
        safe::SlurmdProbeConfig probe;
        std::vector<safe::ProbeTarget> targets;
        {
          std::lock_guard lock(mutex);
          probe = planner->config().controller.slurmd_probe;
          if (probe.interval_ms > 0 && health.slurm_ok) targets = detector.targets(*planner);
        }
        auto round_start = std::chrono::steady_clock::now();
        if (!targets.empty()) {
          auto results = safe::probe_slurmds(targets, probe.timeout_ms, probe.max_in_flight);
          std::lock_guard lock(mutex);
          try {
            detector.apply(results, *planner, {probe.failures, 2}, wall_ms());
          } catch (const std::exception& e) {
            log_line(std::string("safed: slurmd probe round failed: ") + e.what());
          }
          planner->set_unanswered_nodes(detector.unanswered());
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
      log_line("safed: warning: " + s.listen + " is not a loopback address: credentials and job records cross the "
               "network in clear text; keep controller.listen on 127.0.0.1 or put TLS in front (docs/security.md)");

    int failures = 0;
    auto next = std::chrono::steady_clock::now();
    long long licenses_at = 0, pruned_at = 0, shape_at = 0;
    // Where the job_submit plugin reads the cluster shape: safe.yaml's controller.state_dir, which
    // --state-dir does not change (slurmctld reads safe.yaml, not safed's command line).
    std::filesystem::create_directories(config.controller.state_dir, ec);
    safe::ClusterShapePublisher shape_publisher(safe::cluster_shape_path(config.controller.state_dir));
    std::string shape_error, licenses_error;  // the last ones logged: each is logged once
    // Hourly: the store keeps finished jobs for controller.keep_history_days; the evidence of jobs
    // safed never classified (not SaFE's, or safed was down) goes after a week.
    auto prune = [&](long long now) {
      int days = planner->config().controller.keep_history_days;
      try {
        if (days > 0) {
          long long before = now - 86400LL * days;
          before = std::min(before, now - planner->config().failover.lemon_window_s);
          store.begin();
          long long n = store.prune(before);
          store.commit();
          if (n) log_line("safed: pruned " + std::to_string(n) + " jobs that ended more than " + std::to_string(days) +
                          " days ago from the state store");
        }
      } catch (const std::exception& e) {
        store.rollback();
        log_line(std::string("safed: pruning the state store failed: ") + e.what());
      }
      files.sweep_evidence(now - 7 * 86400, 100000);
      user_reader.forget_idle(std::chrono::seconds(600));
      evidence_reader.forget_idle(std::chrono::seconds(600));
    };
    while (!g_stop) {
      if (g_reload.exchange(false)) {
        safe::ConfigResult fresh = safe::load_config_file(s.config_path);
        std::lock_guard lock(mutex);
        if (fresh.ok()) {
          planner->set_config(*fresh.config);
          log_line("safed: reloaded " + s.config_path);
        } else {
          log_line("safed: kept the previous config: " + s.config_path + " has errors (first: " +
                   fresh.errors.front().to_string() + "); fix it and send SIGHUP again");
        }
      }
      {
        std::lock_guard lock(mutex);
        auto t0 = std::chrono::steady_clock::now();
        auto nodes = slurm->load_nodes();
        auto jobs = nodes ? slurm->load_jobs() : safe::Result<std::vector<safe::SlurmJob>>(safe::Error{nodes.error()});
        if (!nodes || !jobs) {
          // Never act on partial data: wait, with growing pauses, until both lists load.
          const std::string& error = jobs.error();
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
            planner->reconcile(*jobs, *nodes, now);
            ++health.passes;  // a pass rolled back is none: tests count passes in which safed could act
          } catch (const std::exception& e) {
            // The pass was rolled back: start again from the store, as after a crash of safed.
            log_line(std::string("safed: reconcile pass failed: ") + e.what() + "; reloading the state store");
            for (const auto& line : planner->take_log()) log_line(line);
            try {
              planner_owner = make_planner(planner->config());
              planner = planner_owner.get();
            } catch (const std::exception& reload) {
              log_line(std::string("safed: cannot reload the state store: ") + reload.what());
            }
          }
          if (now - pruned_at >= 3600) {
            prune(now);
            pruned_at = now;
          }
          if (now - shape_at >= 10) {
            auto parts = slurm->load_partitions();
            safe::Status published = parts ? shape_publisher.publish(safe::build_cluster_shape(*parts, *nodes, now), now)
                                           : safe::Status(safe::Error{"safed: " + parts.error()});
            if (!published && published.error() != shape_error) log_line(published.error());
            shape_error = published ? "" : published.error();
            shape_at = now;
          }
          if (now - licenses_at >= 10) {
            auto licenses = slurm->load_licenses();
            if (licenses) health.licenses = *licenses;
            else if (licenses.error() != licenses_error) log_line("safed: " + licenses.error() + " (the status shows the last licenses read)");
            licenses_error = licenses.error();
            licenses_at = now;
          }
          health.last_pass = now;
          health.last_pass_ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
        for (const auto& line : planner->take_log()) log_line(line);
      }
      // Reads a pass is waiting for (the evidence of an attempt that just ended, a checkpoint)
      // usually take a millisecond: wait for them, without the lock, and pass again at once.
      bool evidence_answered = evidence_reader.wait_for_urgent(std::chrono::milliseconds(250));
      if (user_reader.wait_for_urgent(std::chrono::milliseconds(250)) || evidence_answered) continue;
      int delay_ms = planner->config().controller.poll_interval_ms;
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
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
