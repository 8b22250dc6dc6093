// The drain/resume protocol as a table: node state and reason x verdict -> action.
#include <gtest/gtest.h>

#include "common/drain_decision.hpp"

namespace safe {
namespace {

enum class V { drain, pending, recovered, recovering };

RunVerdict verdict(V v) {
  RunVerdict out;
  if (v == V::drain) out.drain_cause = CheckResult{"ecc_uncorrectable", CheckStatus::fail, Severity::critical, true, "gpu3 uncorrectable ECC=2"};
  if (v == V::pending) out.pending.push_back({"temperature", CheckStatus::fail, Severity::critical, false, "gpu1 hot"});
  out.all_recovered = v == V::recovered;
  return out;
}

struct DecisionCase {
  const char* name;
  bool readable;
  const char* state;
  const char* reason;
  V verdict;
  bool startup;
  NodeAction action;
};

class DrainDecisionTest : public ::testing::TestWithParam<DecisionCase> {};

TEST_P(DrainDecisionTest, Decides) {
  const DecisionCase& c = GetParam();
  // The node as scontrol prints it, read the way the checker reads it.
  std::optional<NodeStatus> node;
  if (c.readable) {
    std::string line = std::string("NodeName=n1 Arch=x86_64 State=") + c.state;
    if (*c.reason) line += std::string(" Reason=") + c.reason + " [root@2026-11-29T22:50:00]";
    node = parse_scontrol_show_node(line + "\n");
    ASSERT_TRUE(node.has_value()) << c.name;
  }
  DrainDecision d = decide_drain(node, verdict(c.verdict), c.startup);
  EXPECT_EQ(d.action, c.action) << c.name << ": " << d.why;
  if (d.action == NodeAction::drain) {
    EXPECT_EQ(d.reason, "SaFE: gpu3 uncorrectable ECC=2");
  }
}

const DecisionCase kDecisionCases[] = {
    {"drain_idle_node_with_no_reason", true, "IDLE", "", V::drain, false, NodeAction::drain},
    {"drain_busy_node", true, "MIXED", "", V::drain, false, NodeAction::drain},
    {"read_failure_means_no_action", false, "", "", V::drain, false, NodeAction::none},
    {"read_failure_never_resumes", false, "", "", V::recovered, false, NodeAction::none},
    {"startup_run_never_calls_the_controller", true, "IDLE", "", V::drain, true, NodeAction::none},
    {"admin_reason_is_untouched", true, "IDLE+DRAIN", "ADMIN SHUTDOWN", V::drain, false, NodeAction::none},
    {"admin_drain_is_never_resumed", true, "IDLE+DRAIN", "replacing fan", V::recovered, false, NodeAction::none},
    // Slurm 23.02.5 to 25.11 without accounting keep a resumed node's reason: on a node in service
    // it is nobody's drain, and a real fault drains the node.
    {"stale_admin_reason_on_undrained_node_drained", true, "IDLE", "replacing fan", V::drain, false, NodeAction::drain},
    {"stale_admin_reason_on_busy_node_drained", true, "MIXED", "replacing fan", V::drain, false, NodeAction::drain},
    {"stale_own_reason_on_healthy_node_left_alone", true, "IDLE", "SaFE: old", V::recovered, false, NodeAction::none},
    {"quarantine_is_untouched", true, "IDLE+DRAIN", "SaFE-quarantine: lemon 3 faults/24h", V::drain, false, NodeAction::none},
    {"quarantine_is_never_resumed", true, "IDLE+DRAIN", "SaFE-quarantine: lemon", V::recovered, false, NodeAction::none},
    {"own_drain_resumed_after_recovery", true, "IDLE+DRAIN", "SaFE: gpu3 uncorrectable ECC=2", V::recovered, false, NodeAction::resume},
    {"own_drain_kept_while_recovering", true, "IDLE+DRAIN", "SaFE: gpu3 uncorrectable ECC=2", V::recovering, false, NodeAction::none},
    {"own_drain_kept_while_failing", true, "IDLE+DRAIN", "SaFE: gpu3 uncorrectable ECC=2", V::drain, false, NodeAction::none},
    {"own_drain_kept_while_pending", true, "DRAINED", "SaFE: gpu1 hot", V::pending, false, NodeAction::none},
    {"own_stale_reason_on_undrained_node_redrained", true, "IDLE", "SaFE: old", V::drain, false, NodeAction::drain},
    {"pending_does_not_drain", true, "IDLE", "", V::pending, false, NodeAction::none},
    {"healthy_undrained_node_left_alone", true, "IDLE", "", V::recovered, false, NodeAction::none},
    {"pending_reboot_left_alone", true, "IDLE+DRAIN+REBOOT_REQUESTED", "SaFE: x", V::recovered, false, NodeAction::none},
    {"reboot_issued_left_alone", true, "DOWN+REBOOT_ISSUED", "", V::drain, false, NodeAction::none},
    {"maintenance_left_alone", true, "IDLE+MAINTENANCE", "", V::drain, false, NodeAction::none},
    {"not_responding_left_alone", true, "DOWN+NOT_RESPONDING", "", V::drain, false, NodeAction::none},
    {"not_responding_star_left_alone", true, "IDLE*", "", V::drain, false, NodeAction::none},
    {"resume_needs_drain_flag", true, "DOWN", "SaFE: x", V::recovered, false, NodeAction::none},
};

INSTANTIATE_TEST_SUITE_P(Protocol, DrainDecisionTest, ::testing::ValuesIn(kDecisionCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(DrainReason, IsOursOneLineAndShort) {
  EXPECT_EQ(own_reason("gpu3 uncorrectable ECC=2"), "SaFE: gpu3 uncorrectable ECC=2");
  std::string long_detail(300, 'x');
  std::string reason = own_reason(long_detail + "\nsecond line");
  EXPECT_EQ(reason.size(), kMaxReasonLength);
  EXPECT_TRUE(is_own_reason(reason));
  EXPECT_EQ(reason.substr(reason.size() - 3), "...");
  EXPECT_EQ(own_reason("a\nb\tc"), "SaFE: a b c");
  EXPECT_EQ(own_reason(std::string(kMaxReasonLength - 6, 'y')).size(), kMaxReasonLength);  // exactly fits: kept
  EXPECT_EQ(own_reason(std::string(kMaxReasonLength - 6, 'y')).find("..."), std::string::npos);
}

TEST(DrainReason, PrefixesAreDistinct) {
  EXPECT_TRUE(is_own_reason("SaFE: x"));
  EXPECT_FALSE(is_own_reason("SaFE-quarantine: x"));
  EXPECT_TRUE(is_quarantine_reason("SaFE-quarantine: x"));
  EXPECT_FALSE(is_own_reason("safe: x"));
  EXPECT_FALSE(is_own_reason(""));
}

struct ParseCase {
  const char* name;
  const char* output;
  bool ok;
  const char* state;
  const char* reason;
};

class ScontrolParseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ScontrolParseTest, Parses) {
  const ParseCase& c = GetParam();
  auto node = parse_scontrol_show_node(c.output);
  ASSERT_EQ(node.has_value(), c.ok) << c.name;
  if (!node) return;
  EXPECT_EQ(node->state, c.state);
  EXPECT_EQ(node->reason, c.reason);
}

const ParseCase kParseCases[] = {
    {"idle_no_reason",
     "NodeName=n1 Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE ThreadsPerCore=1 Partitions=gpu "
     "CfgTRES=cpu=2,mem=2000M,billing=2,gres/gpu=8 AllocTRES= CapWatts=n/a\n",
     true, "IDLE", ""},
    {"drained_with_reason",
     "NodeName=n2 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=1 ExtSensorsTemp=n/s "
     "Reason=SaFE: gpu3 uncorrectable ECC=2 [root@2026-11-29T22:50:00]\n",
     true, "IDLE+DRAIN", "SaFE: gpu3 uncorrectable ECC=2"},
    {"admin_reason_with_brackets",
     "NodeName=n3 State=DOWN+DRAIN Reason=ADMIN SHUTDOWN [ticket 12] [alice@2026-11-29T20:00:00]\n", true,
     "DOWN+DRAIN", "ADMIN SHUTDOWN [ticket 12]"},
    {"stale_reason_on_idle_node_dropped",
     "NodeName=n4 Arch=x86_64 State=IDLE ThreadsPerCore=1 Reason=ADMIN: replacing fan [root@2026-11-29T20:00:00]\n",
     true, "IDLE", ""},
    {"stale_reason_on_not_responding_node_dropped", "NodeName=n4 State=IDLE* Reason=SaFE: old [root@2026-11-29T20:00:00]\n",
     true, "IDLE*", ""},
    {"down_reason_kept", "NodeName=n4 State=DOWN* Reason=Not responding [slurm@2026-11-29T20:00:00]\n", true, "DOWN*",
     "Not responding"},
    {"fail_reason_kept", "NodeName=n4 State=IDLE+FAIL Reason=SaFE: lost [root@2026-11-29T20:00:00]\n", true,
     "IDLE+FAIL", "SaFE: lost"},
    {"not_found", "Node n9 not found\n", false, "", ""},
    {"empty", "", false, "", ""},
};

INSTANTIATE_TEST_SUITE_P(Output, ScontrolParseTest, ::testing::ValuesIn(kParseCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(NodeStatusFlags, DrainAndIdle) {
  EXPECT_TRUE((NodeStatus{"n", "IDLE+DRAIN", "", ""}).drained());
  EXPECT_TRUE((NodeStatus{"n", "DRAINED", "", ""}).drained());
  EXPECT_TRUE((NodeStatus{"n", "MIXED+DRAIN", "", ""}).drained());
  EXPECT_FALSE((NodeStatus{"n", "IDLE", "", ""}).drained());
  EXPECT_TRUE((NodeStatus{"n", "IDLE", "", ""}).idle());
  EXPECT_TRUE((NodeStatus{"n", "IDLE+DRAIN", "", ""}).idle());
  EXPECT_FALSE((NodeStatus{"n", "MIXED", "", ""}).idle());
  EXPECT_FALSE((NodeStatus{"n", "ALLOCATED", "", ""}).idle());
  EXPECT_FALSE((NodeStatus{"n", "IDLE+COMPLETING", "", ""}).idle());
}

}  // namespace
}  // namespace safe
