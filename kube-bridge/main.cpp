// safe-kube-bridge: SaFE's REST API. Reads kube_bridge from safe.yaml, serves until SIGTERM.
//   safe-kube-bridge [--config FILE] [--listen HOST:PORT] [--jwt-key-file FILE] [--work-dir DIR]
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include "common/config.hpp"
#include "kube-bridge/bridge_api.hpp"
#include "kube-bridge/controller_history.hpp"
#include "kube-bridge/http_server.hpp"
#include "kube-bridge/kube_client_curl.hpp"
#include "kube-bridge/openapi_document.hpp"
#include "kube-bridge/slurm_client_libslurm.hpp"

namespace {

int usage(const char* message) {
  if (message) std::fprintf(stderr, "safe-kube-bridge: %s\n", message);
  std::fprintf(stderr,
               "usage: safe-kube-bridge [--config FILE] [--listen HOST:PORT] [--jwt-key-file FILE] [--work-dir DIR]\n"
               "  --config        safe.yaml (default $SAFE_CONFIG, else /etc/safe/safe.yaml)\n"
               "  --listen        overrides kube_bridge.listen (port 0: any free port, printed at start)\n"
               "  --jwt-key-file  overrides kube_bridge.jwt_key_file (Slurm's auth/jwt key)\n"
               "  --work-dir      overrides kube_bridge.slurm_work_dir\n");
  return 2;
}

bool read_key(const std::string& path, std::string& key, std::string& error) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return error = "cannot read JWT key " + path + ": " + std::strerror(errno), false;
  if (st.st_mode & 0077)
    return error = "JWT key " + path + " is readable by group or others; chmod 600 it (as Slurm requires)", false;
  std::ifstream in(path, std::ios::binary);
  key.assign(std::istreambuf_iterator<char>(in), {});
  if (key.empty()) return error = "JWT key " + path + " is empty; use the key of Slurm's AuthAltParameters=jwt_key=", false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path = safe::config_path_from_env(), listen, jwt_key_file, work_dir;
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
    else return usage(("unknown argument '" + a + "'").c_str());
  }

  safe::ConfigResult loaded = safe::load_config_file(config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::fprintf(stderr, "safe-kube-bridge: %s\n", e.to_string().c_str());
    std::fprintf(stderr, "safe-kube-bridge: fix the config (safectl config check %s) and start again\n", config_path.c_str());
    return 1;
  }
  const safe::KubeBridgeConfig& kb = loaded.config->kube_bridge;
  safe::bridge::HttpSettings http;
  if (!safe::bridge::split_listen_address(listen.empty() ? kb.listen : listen, http.host, http.port))
    return usage("--listen expects HOST:PORT");
  http.tls_cert = kb.tls_cert;
  http.tls_key = kb.tls_key;
  http.max_body_bytes = static_cast<std::size_t>(kb.max_body_bytes);

  safe::bridge::AuthSettings auth_settings;
  auth_settings.munge = kb.munge_auth;
  auth_settings.admins = kb.admins;
  if (jwt_key_file.empty()) jwt_key_file = kb.jwt_key_file;
  if (!jwt_key_file.empty()) {
    std::string error;
    if (!read_key(jwt_key_file, auth_settings.jwt_key, error)) {
      std::fprintf(stderr, "safe-kube-bridge: %s\n", error.c_str());
      return 1;
    }
  }

  // Signals go to one waiting thread, which stops the server; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  safe::bridge::BridgeSettings settings;
  settings.config = *loaded.config;
  settings.work_dir = work_dir.empty() ? kb.slurm_work_dir : work_dir;
  settings.openapi_document = safe::bridge::openapi_document();
  safe::bridge::LibSlurmClient slurm;
  safe::bridge::LibMungeDecoder munge;
  safe::bridge::SystemUserDirectory users;
  safe::bridge::Authenticator auth(auth_settings, &munge, &users);
  safe::bridge::BridgeMetrics metrics;
  safe::bridge::BridgeApi api(settings, auth, users, slurm, metrics);
  // The Kubernetes target, when configured: a kubeconfig file, or the pod's service account.
  std::unique_ptr<safe::bridge::CurlKubeClient> kube_client;
  std::unique_ptr<safe::bridge::KubeTarget> kube;
  const safe::KubernetesConfig& kc = kb.kubernetes;
  if (!kc.kubeconfig.empty() || std::getenv("KUBERNETES_SERVICE_HOST")) {
    auto connection = kc.kubeconfig.empty() ? safe::bridge::in_cluster_connection()
                                            : safe::bridge::load_kubeconfig(kc.kubeconfig, "/run/safe-kube-bridge");
    if (!connection.connection) {
      std::fprintf(stderr, "safe-kube-bridge: %s\n", connection.error.c_str());
      return 1;
    }
    kube_client = std::make_unique<safe::bridge::CurlKubeClient>(*connection.connection);
    kube = std::make_unique<safe::bridge::KubeTarget>(*loaded.config, *kube_client);
    kube->start();
    api.set_kube_target(kube.get());
    std::fprintf(stderr, "safe-kube-bridge: Kubernetes target on %s, namespace %s\n", connection.connection->server.c_str(),
                 kc.namespace_.c_str());
  }
  // safed, when deployed: $SAFE_CONTROLLER_URL, else kube_bridge.controller_url.
  const char* controller_env = std::getenv("SAFE_CONTROLLER_URL");
  std::string controller_url = controller_env && *controller_env ? controller_env : kb.controller_url;
  while (!controller_url.empty() && controller_url.back() == '/') controller_url.pop_back();
  safe::bridge::CurlControllerHistory history(controller_url);
  if (!controller_url.empty()) api.set_controller_history(&history);
  safe::bridge::HttpServer server(http, api);
  std::string error;
  if (!server.bind(error)) {
    std::fprintf(stderr, "safe-kube-bridge: %s\n", error.c_str());
    return 1;
  }
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    std::fprintf(stderr, "safe-kube-bridge: signal %d, stopping\n", sig);
    server.stop();
  });
  std::fprintf(stderr, "safe-kube-bridge: listening on %s://%s:%d (config %s; jwt %s, munge %s)\n",
               http.tls_cert.empty() ? "http" : "https", http.host.c_str(), server.port(), config_path.c_str(),
               auth_settings.jwt_key.empty() ? "off" : "on", auth_settings.munge ? "on" : "off");
  std::fflush(stderr);
  server.run();
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  if (kube) {
    // The watch threads may sit in libcurl for up to a minute (the watch's timeoutSeconds) and
    // use the target: end the process here instead of destroying what they use.
    std::fflush(stderr);
    std::_Exit(0);
  }
  return 0;
}
