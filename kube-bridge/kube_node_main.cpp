// safe-kube-node: sets or clears SaFE's unhealthy mark on a Kubernetes node, for the node health
// agent (the DaemonSet in etc/kubernetes/) until safe-healthcheck --kube calls the same function.
//   safe-kube-node mark NODE [--reason CLASS] [--kubeconfig FILE]
//   safe-kube-node clear NODE [--kubeconfig FILE]
// Without --kubeconfig: $KUBECONFIG, else the pod's service account.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "kube-bridge/kube_client_curl.hpp"
#include "kube-bridge/kube_node_mark.hpp"

namespace {
int usage(const char* why) {
  if (why) std::fprintf(stderr, "safe-kube-node: %s\n", why);
  std::fprintf(stderr, "usage: safe-kube-node mark|clear NODE [--reason CLASS] [--kubeconfig FILE]\n");
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("usage: safe-kube-node mark|clear NODE [--reason CLASS] [--kubeconfig FILE]\n");
    return 0;
  }
  if (argc < 3) return usage("needs an action and a node");
  std::string action = argv[1], node = argv[2], reason = "gpu_fault", kubeconfig;
  if (action != "mark" && action != "clear") return usage(("unknown action '" + action + "'").c_str());
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--reason" && i + 1 < argc) reason = argv[++i];
    else if (a == "--kubeconfig" && i + 1 < argc) kubeconfig = argv[++i];
    else return usage(("unknown argument '" + a + "'").c_str());
  }
  if (kubeconfig.empty() && std::getenv("KUBECONFIG")) kubeconfig = std::getenv("KUBECONFIG");
  auto connection = kubeconfig.empty() ? safe::bridge::in_cluster_connection()
                                       : safe::bridge::load_kubeconfig(kubeconfig, "/tmp/safe-kube-node-" + std::to_string(getuid()));
  if (!connection) {
    std::fprintf(stderr, "safe-kube-node: %s\n", connection.error().c_str());
    return 1;
  }
  safe::bridge::CurlKubeClient client(*connection);
  if (safe::Status marked = safe::bridge::mark_node_unhealthy(client, node, reason, action == "clear"); !marked) {
    std::fprintf(stderr, "safe-kube-node: %s; check the node name and the RBAC (nodes: get, patch)\n",
                 marked.error().c_str());
    return 1;
  }
  std::printf("safe-kube-node: %s %s\n", action == "clear" ? "cleared the unhealthy mark on" : "marked unhealthy:", node.c_str());
  return 0;
}
