#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "common/yaml_document.hpp"
#include "common/base64.hpp"
#include "kube-bridge/kube_client.hpp"

namespace safe::bridge {
namespace {

using safe::yaml::Node;

const Node* child(const Node* n, std::string_view key) {
  if (!n || n->kind != Node::Kind::mapping) return nullptr;
  for (const auto& e : n->entries)
    if (e.key.value == key) return &e.value;
  return nullptr;
}

std::string scalar(const Node* n, std::string_view key) {
  const Node* v = child(n, key);
  return v && v->kind == Node::Kind::scalar ? v->value : "";
}

// The entry of a named list (clusters, users, contexts) whose name is `name`.
const Node* named(const Node* root, std::string_view list, std::string_view item, const std::string& name) {
  const Node* l = child(root, list);
  if (!l || l->kind != Node::Kind::sequence) return nullptr;
  for (const auto& i : l->items)
    if (scalar(&i, "name") == name) return child(&i, item);
  return nullptr;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `*-data` (base64 PEM) becomes a file: libcurl takes certificates by path.
bool materialise(const Node* n, const std::string& file_key, const std::string& data_key, const std::string& scratch,
                 std::string& out, std::string& error) {
  out = scalar(n, file_key);
  std::string data = scalar(n, data_key);
  if (data.empty()) return true;
  auto pem = base64_decode(data, Base64::standard);
  if (!pem) return error = data_key + " is not base64", false;
  mkdir(scratch.c_str(), 0700);
  out = scratch + "/" + data_key + ".pem";
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << *pem;
  chmod(out.c_str(), 0600);
  if (!f) return error = "cannot write " + out, false;
  return true;
}

}  // namespace

Result<KubeConnection> load_kubeconfig(const std::string& path, const std::string& scratch_dir) {
  auto text = read_file(path);
  if (!text) return Error{"cannot read kubeconfig " + path + "; fix kube_bridge.kubernetes.kubeconfig"};
  auto parsed = safe::yaml::parse(*text);
  if (!parsed.root) {
    std::string why = parsed.errors.empty() ? "" : parsed.errors[0].message;
    return Error{"kubeconfig " + path + " is not valid YAML: " + why};
  }
  const Node* root = &*parsed.root;
  std::string context = scalar(root, "current-context");
  const Node* ctx = named(root, "contexts", "context", context);
  if (!ctx) return Error{"kubeconfig " + path + ": no context '" + context + "' (current-context)"};
  const Node* cluster = named(root, "clusters", "cluster", scalar(ctx, "cluster"));
  const Node* user = named(root, "users", "user", scalar(ctx, "user"));
  if (!cluster) return Error{"kubeconfig " + path + ": context '" + context + "' names no known cluster"};
  KubeConnection c;
  c.server = scalar(cluster, "server");
  if (c.server.empty()) return Error{"kubeconfig " + path + ": the cluster has no server"};
  c.insecure = scalar(cluster, "insecure-skip-tls-verify") == "true";
  std::string error;
  if (!materialise(cluster, "certificate-authority", "certificate-authority-data", scratch_dir, c.ca_file, error) ||
      !materialise(user, "client-certificate", "client-certificate-data", scratch_dir, c.client_cert, error) ||
      !materialise(user, "client-key", "client-key-data", scratch_dir, c.client_key, error))
    return Error{"kubeconfig " + path + ": " + error};
  c.token = scalar(user, "token");
  if (c.token.empty() && !scalar(user, "tokenFile").empty()) {
    auto t = read_file(scalar(user, "tokenFile"));
    if (!t) return Error{"kubeconfig " + path + ": cannot read tokenFile"};
    c.token = *t;
  }
  while (!c.token.empty() && (c.token.back() == '\n' || c.token.back() == '\r')) c.token.pop_back();
  return c;
}

Result<KubeConnection> in_cluster_connection() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port)
    return Error{"not running in a Kubernetes pod (no KUBERNETES_SERVICE_HOST); set kube_bridge.kubernetes.kubeconfig"};
  const std::string dir = "/var/run/secrets/kubernetes.io/serviceaccount";
  auto token = read_file(dir + "/token");
  if (!token) return Error{"cannot read the service account token in " + dir};
  KubeConnection c;
  std::string h = host;
  c.server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" + port;
  c.token = *token;
  c.ca_file = dir + "/ca.crt";
  return c;
}

}  // namespace safe::bridge
