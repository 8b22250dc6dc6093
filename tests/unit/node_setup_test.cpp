// Node name, config location, and what a program run by slurmd learns from its parent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "healthcheck/node_setup.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

TEST(NodeName, FlagThenSlurmdThenConfigThenHost) {
  EXPECT_EQ(resolve_node_name("n9", "n1", "cfg", "host.example.com"), "n9");
  EXPECT_EQ(resolve_node_name("", "n1", "cfg", "host.example.com"), "n1");
  EXPECT_EQ(resolve_node_name("", "", "cfg", "host.example.com"), "cfg");
  EXPECT_EQ(resolve_node_name("", nullptr, "", "host.example.com"), "host");
}

class ProcFixture : public ::testing::Test {
 protected:
  test::TempDir dir;
  NodeFs fs{test::copy_fixture(dir, "node-healthy")};
};

TEST_F(ProcFixture, FindsTheSlurmdThatStartedUs) {
  EXPECT_EQ(slurmd_pid(fs, 3000), 3000);  // parent is slurmd
  EXPECT_EQ(slurmd_pid(fs, 3100), 3000);  // grandparent is slurmd
  EXPECT_EQ(slurmd_pid(fs, 3200), 0);     // a login shell
  EXPECT_EQ(slurmd_pid(fs, 99999), 0);
  EXPECT_EQ(slurmd_instance(fs, 3100), "3000:123456");
  EXPECT_EQ(slurmd_instance(fs, 3200), "");
}

TEST_F(ProcFixture, AdoptsSlurmConfFromSlurmdsCommandLine) {
  unsetenv("SLURM_CONF");
  adopt_slurmd_environment(fs, 3000);
  ASSERT_NE(std::getenv("SLURM_CONF"), nullptr);
  EXPECT_STREQ(std::getenv("SLURM_CONF"), "/tmp/cluster/slurm.conf");
  setenv("SLURM_CONF", "/etc/other/slurm.conf", 1);  // what Slurm passed wins
  adopt_slurmd_environment(fs, 3000);
  EXPECT_STREQ(std::getenv("SLURM_CONF"), "/etc/other/slurm.conf");
  unsetenv("SLURM_CONF");
  adopt_slurmd_environment(fs, 0);  // not run by slurmd: nothing adopted
  EXPECT_EQ(std::getenv("SLURM_CONF"), nullptr);
}

// A slurmd started with -f from a shell that had another cluster's SLURM_CONF (the test clusters'
// own clusters, started from a test that sourced the main cluster's env): its checker followed
// the stale SLURM_CONF and checked the other cluster's GPUs.
TEST_F(ProcFixture, SlurmdsCommandLineWinsOverASlurmConfInItsEnvironment) {
  using namespace std::string_literals;  // "..."s keeps the NULs between the entries
  std::string proc = dir.path() + "/node-healthy/proc/3000";
  std::ofstream(proc + "/environ", std::ios::binary) << "HOME=/root\0SLURM_CONF=/tmp/other-cluster/slurm.conf\0"s;
  unsetenv("SLURM_CONF");
  adopt_slurmd_environment(fs, 3000);
  ASSERT_NE(std::getenv("SLURM_CONF"), nullptr);
  EXPECT_STREQ(std::getenv("SLURM_CONF"), "/tmp/cluster/slurm.conf");
  std::ofstream(proc + "/cmdline", std::ios::binary) << "slurmd\0-D\0"s;
  unsetenv("SLURM_CONF");
  adopt_slurmd_environment(fs, 3000);  // no -f: the environment's
  EXPECT_STREQ(std::getenv("SLURM_CONF"), "/tmp/other-cluster/slurm.conf");
  unsetenv("SLURM_CONF");
}

TEST_F(ProcFixture, ConfigBesideSlurmConfOrDefault) {
  bool explicit_path = true;
  unsetenv("SAFE_CONFIG");
  setenv("SLURM_CONF", (dir.path() + "/slurm.conf").c_str(), 1);
  EXPECT_EQ(node_config_path(explicit_path), SAFE_DEFAULT_CONFIG_PATH);
  EXPECT_FALSE(explicit_path);
  std::ofstream(dir.path() + "/safe.yaml") << "health: {}\n";
  EXPECT_EQ(node_config_path(explicit_path), dir.path() + "/safe.yaml");
  setenv("SAFE_CONFIG", "/x/safe.yaml", 1);
  EXPECT_EQ(node_config_path(explicit_path), "/x/safe.yaml");
  EXPECT_TRUE(explicit_path);
  unsetenv("SAFE_CONFIG");
  unsetenv("SLURM_CONF");
}

TEST(NodeConfig, MissingDefaultMeansDefaultsButMissingExplicitIsAnError) {
  auto defaults = load_node_config("/nonexistent/safe.yaml", false);
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->health.pass_runs_before_resume, 3);
  auto missing = load_node_config("/nonexistent/safe.yaml", true);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("cannot read"), std::string::npos);
}

}  // namespace
}  // namespace safe
