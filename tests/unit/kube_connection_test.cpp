// Reading a kubeconfig: the current context's server, token and certificates.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kube-bridge/kube_client.hpp"

namespace safe::bridge {
namespace {

class Kubeconfig : public ::testing::Test {
 protected:
  std::string dir = std::filesystem::temp_directory_path() / ("safe-kc-" + std::to_string(getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& text) {
    std::ofstream(dir + "/config") << text;
    return dir + "/config";
  }
};

TEST_F(Kubeconfig, CurrentContextWithInlineCaAndToken) {
  auto r = load_kubeconfig(write(R"(apiVersion: v1
kind: Config
current-context: b
clusters:
  - name: one
    cluster: {server: "https://one:6443"}
  - name: two
    cluster:
      server: https://two:6443
      certificate-authority-data: UEVNIENBCg==
users:
  - name: u
    user: {token: abc123}
contexts:
  - name: a
    context: {cluster: one, user: u}
  - name: b
    context: {cluster: two, user: u}
)"),
                           dir + "/scratch");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->server, "https://two:6443");
  EXPECT_EQ(r->token, "abc123");
  std::ifstream ca(r->ca_file);
  std::string pem((std::istreambuf_iterator<char>(ca)), {});
  EXPECT_EQ(pem, "PEM CA\n");
}

TEST_F(Kubeconfig, ClientCertificateFilesAndErrors) {
  auto r = load_kubeconfig(write("current-context: c\nclusters: [{name: k, cluster: {server: 'https://k'}}]\n"
                                 "users: [{name: u, user: {client-certificate: /p/c.pem, client-key: /p/k.pem}}]\n"
                                 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"),
                           dir + "/scratch");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->client_cert, "/p/c.pem");
  EXPECT_EQ(r->client_key, "/p/k.pem");
  EXPECT_NE(load_kubeconfig(write("current-context: nope\n"), dir).error().find("no context 'nope'"), std::string::npos);
  EXPECT_NE(load_kubeconfig(dir + "/missing", dir).error().find("cannot read kubeconfig"), std::string::npos);
}

}  // namespace
}  // namespace safe::bridge
