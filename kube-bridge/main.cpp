// safe-kube-bridge: SaFE's REST API. Reads kube_bridge from safe.yaml, serves until SIGTERM.
//   safe-kube-bridge [--config FILE] [--listen HOST:PORT] [--jwt-key-file FILE] [--work-dir DIR] [--state-dir DIR]
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/authenticator.hpp"
#include "common/daemon_log.hpp"
#include "common/config.hpp"
#include "common/user_directory.hpp"
#include "controller/safed/etcd_client.hpp"
#include "kube-bridge/bridge_api.hpp"
#include "kube-bridge/controller_history.hpp"
#include "kube-bridge/http_server.hpp"
#include "kube-bridge/kube_client_curl.hpp"
#include "kube-bridge/openapi_document.hpp"
#include "common/slurm/libslurm.hpp"
#include "common/systemd_notify.hpp"
#include "kube-bridge/slurm_cache.hpp"
#include "kube-bridge/user_work_dir.hpp"

namespace {

// On a mistake (message given) the usage goes to stderr and the exit code is 2; --help prints it.
int usage(const char* message) {
  if (message) std::fprintf(stderr, "safe-kube-bridge: %s\n", message);
  std::fprintf(message ? stderr : stdout,
               "usage: safe-kube-bridge [--config FILE] [--listen HOST:PORT] [--jwt-key-file FILE] [--work-dir DIR]\n"
               "                        [--state-dir DIR]\n"
               "  --config        safe.yaml (default $SAFE_CONFIG, else /etc/safe/safe.yaml)\n"
               "  --listen        overrides kube_bridge.listen (port 0: any free port, printed at start)\n"
               "  --jwt-key-file  overrides auth.jwt_key_file (Slurm's auth/jwt key)\n"
               "  --work-dir      overrides kube_bridge.slurm_work_dir\n"
               "  --state-dir     overrides kube_bridge.state_dir (services' records and endpoints files)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = safe::config_path_from_env(), listen, jwt_key_file, work_dir, state_dir;
  bool state_dir_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (a == "-h" || a == "--help") return usage(nullptr), 0;
    if (a == "--config") { if (!value(config_path)) return usage("--config needs a file"); }
    else if (a == "--listen") { if (!value(listen)) return usage("--listen needs HOST:PORT"); }
    else if (a == "--jwt-key-file") { if (!value(jwt_key_file)) return usage("--jwt-key-file needs a file"); }
    else if (a == "--work-dir") { if (!value(work_dir)) return usage("--work-dir needs a directory"); }
    else if (a == "--state-dir") { if (!value(state_dir)) return usage("--state-dir needs a directory"); state_dir_given = true; }
    else return usage(("unknown argument '" + a + "'").c_str());
  }

  safe::ConfigResult loaded = safe::load_config_file(config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) safe::log_linef(safe::LogPriority::error, "safe-kube-bridge: %s", e.to_string().c_str());
    safe::log_linef(safe::LogPriority::error, "safe-kube-bridge: fix the config (safectl config check %s) and start again", config_path.c_str());
    return 1;
  }
  const safe::KubeBridgeConfig& kb = loaded.config->kube_bridge;
  safe::HttpServiceSettings http;
  if (!safe::split_listen_address(listen.empty() ? kb.listen : listen, http.host, http.port))
    return usage("--listen expects HOST:PORT");
  http.tls_cert = kb.tls_cert;
  http.tls_key = kb.tls_key;
  http.limits.max_body_bytes = static_cast<std::size_t>(kb.max_body_bytes);
  http.limits.max_connections = static_cast<unsigned>(kb.max_connections);
  http.limits.max_connections_per_client = static_cast<unsigned>(kb.max_connections_per_client);

  safe::AuthSettings auth_settings = safe::auth_settings_from(loaded.config->auth);
  if (jwt_key_file.empty()) jwt_key_file = loaded.config->auth.jwt_key_file;
  if (!jwt_key_file.empty()) {
    auto key = safe::read_jwt_key(jwt_key_file);
    if (!key) {
      safe::log_linef(safe::LogPriority::error, "safe-kube-bridge: %s", key.error().c_str());
      return 1;
    }
    auth_settings.jwt_key = *key;
  }
  std::string slurm_work_dir = work_dir.empty() ? kb.slurm_work_dir : work_dir;
  if (auto checked = safe::bridge::check_work_dir_base(slurm_work_dir); !checked) {
    safe::log_linef(safe::LogPriority::error, "safe-kube-bridge: %s", checked.error().c_str());
    return 1;
  }

  // Signals go to one waiting thread, which stops the server; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  safe::raise_open_file_limit();  // every connection is a descriptor: idle clients must not run us out

  safe::bridge::BridgeSettings settings;
  settings.config = *loaded.config;
  settings.openapi_document = safe::bridge::openapi_document();
  auto libslurm = safe::make_libslurm_client();
  safe::bridge::SlurmCache slurm(*libslurm, *libslurm, std::chrono::milliseconds(1000));
  safe::LibMungeDecoder munge;
  safe::SystemUserDirectory users;
  safe::Authenticator auth(auth_settings, &munge, &users);
  safe::bridge::BridgeMetrics metrics;
  safe::bridge::SystemUserWorkDirs work_dirs(slurm_work_dir, std::chrono::seconds(10));
  safe::bridge::BridgeApi api(settings, auth, users, slurm, metrics, work_dirs);
  // Services (kind service), unless kube_bridge.state_dir is "".
  safe::bridge::ServiceSettings service_settings;
  service_settings.state_dir = state_dir_given ? state_dir : kb.state_dir;
  std::unique_ptr<safe::bridge::ServiceController> services;
  if (!service_settings.state_dir.empty()) {
    services = std::make_unique<safe::bridge::ServiceController>(service_settings, slurm, users, safe::read_user_file_tail);
    if (auto loaded_services = services->load(); !loaded_services) {
      safe::log_linef(safe::LogPriority::error, "safe-kube-bridge: services: %s; fix kube_bridge.state_dir (or set it to \"\" to turn services off)",
                      loaded_services.error().c_str());
      return 1;
    }
    api.set_service_controller(services.get());
  }
  // The Kubernetes target, when configured: a kubeconfig file, or the pod's service account.
  std::unique_ptr<safe::bridge::CurlKubeClient> kube_client;
  std::unique_ptr<safe::bridge::KubeTarget> kube;
  const safe::KubernetesConfig& kc = kb.kubernetes;
  if (!kc.kubeconfig.empty() || std::getenv("KUBERNETES_SERVICE_HOST")) {
    auto connection = kc.kubeconfig.empty() ? safe::bridge::in_cluster_connection()
                                            : safe::bridge::load_kubeconfig(kc.kubeconfig, "/run/safe-kube-bridge");
    if (!connection) {
      safe::log_linef(safe::LogPriority::error, "safe-kube-bridge: %s", connection.error().c_str());
      return 1;
    }
    kube_client = std::make_unique<safe::bridge::CurlKubeClient>(*connection);
    kube = std::make_unique<safe::bridge::KubeTarget>(*loaded.config, *kube_client);
    kube->start();
    api.set_kube_target(kube.get());
    safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: Kubernetes target on %s, namespace %s", connection->server.c_str(),
                 kc.namespace_.c_str());
  }
  // safed, when deployed: $SAFE_CONTROLLER_URL, else kube_bridge.controller_url, else with
  // controller.ha the active instance as etcd has it (looked up again every 5 s at most).
  const char* controller_env = std::getenv("SAFE_CONTROLLER_URL");
  std::string controller_url = controller_env && *controller_env ? controller_env : kb.controller_url;
  while (!controller_url.empty() && controller_url.back() == '/') controller_url.pop_back();
  std::function<std::string()> controller_base = [controller_url] { return controller_url; };
  const safe::HaConfig& ha = loaded.config->controller.ha;
  if (controller_url.empty() && ha.enabled()) {
    struct Active {
      std::mutex mutex;
      std::string url;
      std::chrono::steady_clock::time_point read_at{};
      bool read = false;
    };
    auto active = std::make_shared<Active>();
    controller_base = [active, ha] {
      std::lock_guard lock(active->mutex);
      auto now = std::chrono::steady_clock::now();
      if (!active->read || now - active->read_at > std::chrono::seconds(5)) {
        auto url = safe::active_controller_url(ha);
        active->url = url ? *url : "";
        active->read_at = now;
        active->read = true;
      }
      return active->url;
    };
  }
  safe::bridge::CurlControllerHistory history(controller_base);
  if (!controller_url.empty() || ha.enabled()) api.set_controller_history(&history);
  safe::bridge::BridgeHttpServer server(http, api, metrics);
  if (services) services->start();
  if (auto started = server.start(); !started) {
    safe::log_linef(safe::LogPriority::error, "safe-kube-bridge: %s; %s", started.error().c_str(),
                 started.error().find("TLS") != std::string::npos ? "fix kube_bridge.tls_cert and tls_key"
                                                                   : "change kube_bridge.listen or --listen");
    return 1;
  }
  safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: listening on %s://%s:%d (config %s; jwt %s, munge %s, work dirs %s)",
               http.tls_cert.empty() ? "http" : "https", http.host.c_str(), server.port(), config_path.c_str(),
               auth_settings.jwt_key.empty() ? "off" : "on", auth_settings.munge ? "on" : "off",
               slurm_work_dir.empty() ? "~/safe-bridge" : (slurm_work_dir + "/USER").c_str());
  std::fflush(stderr);
  // Under systemd (safe-kube-bridge.service, Type=notify): ready once the API serves.
  const auto systemd = safe::SystemdNotifier::from_environment(getpid());
  if (auto ready = systemd.notify("READY=1"); !ready) safe::log_linef(safe::LogPriority::warning, "safe-kube-bridge: %s", ready.error().c_str());
  int sig = 0;
  sigwait(&signals, &sig);
  safe::log_linef(safe::LogPriority::notice, "safe-kube-bridge: signal %d, stopping", sig);
  (void)systemd.notify("STOPPING=1");
  server.stop();
  if (services) services->stop_thread();
  return 0;  // the Kubernetes target, destroyed first, stops and joins its threads
}
