// scontrol calls: exact command lines, parsing, and failures that must read as "unknown".
#include <gtest/gtest.h>

#include "common/slurm/node_control.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

using namespace std::chrono_literals;
using test::exited;

TEST(ScontrolNodeControl, ReadsStateAndReason) {
  test::FakeProcessRunner runner;
  runner.respond = [](const std::vector<std::string>&) {
    return exited(0, "NodeName=n2 Arch=x86_64 State=IDLE+DRAIN Reason=SaFE: gpu3 uncorrectable ECC=2 [root@2026-11-29T22:50:00]\n");
  };
  ScontrolNodeControl slurm(runner, 5s);
  auto node = slurm.read("n2");
  ASSERT_TRUE(node) << node.error();
  EXPECT_EQ(node->reason, "SaFE: gpu3 uncorrectable ECC=2");
  EXPECT_EQ(runner.calls.at(0), (std::vector<std::string>{kScontrolPath, "show", "node", "-o", "n2"}));
}

TEST(ScontrolNodeControl, FailuresAreNotStates) {
  test::FakeProcessRunner runner;
  ScontrolNodeControl slurm(runner, 5s);
  runner.respond = [](const auto&) { return test::timed_out(); };
  auto timed_out = slurm.read("n1");
  EXPECT_FALSE(timed_out);
  EXPECT_NE(timed_out.error().find("timed out"), std::string::npos);
  runner.respond = [](const auto&) { return exited(1, "", "slurm_load_node error: Unable to contact slurm controller\n"); };
  auto unreachable = slurm.read("n1");
  EXPECT_FALSE(unreachable);
  EXPECT_NE(unreachable.error().find("Unable to contact"), std::string::npos);
  runner.respond = [](const auto&) { return exited(0, "NodeName=n7 State=IDLE\n"); };
  EXPECT_FALSE(slurm.read("n1")) << "another node's record must not be taken for ours";
  runner.respond = [](const auto&) { return exited(0, "garbage\n"); };
  EXPECT_FALSE(slurm.read("n1"));
}

TEST(ScontrolNodeControl, DrainAndResumeCommandLines) {
  test::FakeProcessRunner runner;
  runner.respond = [](const auto&) { return exited(0, ""); };
  ScontrolNodeControl slurm(runner, 5s);
  EXPECT_TRUE(slurm.drain("n3", "SaFE: gpu3 uncorrectable ECC=2"));
  EXPECT_TRUE(slurm.resume("n3"));
  EXPECT_EQ(runner.calls.at(0), (std::vector<std::string>{kScontrolPath, "update", "nodename=n3", "state=drain",
                                                          "reason=SaFE: gpu3 uncorrectable ECC=2"}));
  EXPECT_EQ(runner.calls.at(1), (std::vector<std::string>{kScontrolPath, "update", "nodename=n3", "state=resume"}));
  runner.respond = [](const auto&) { return exited(1, "", "Invalid node state specified\n"); };
  auto refused = slurm.resume("n3");
  EXPECT_FALSE(refused);
  EXPECT_NE(refused.error().find("Invalid node state"), std::string::npos);
}

}  // namespace
}  // namespace safe
