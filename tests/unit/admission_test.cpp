// Workspace policy decisions, table-driven: membership, defaults, caps, quotas, messages.
#include <gtest/gtest.h>

#include <csignal>

#include "common/admission.hpp"

namespace safe {
namespace {

SafeConfig test_config() {
  ConfigResult r = parse_config(R"(
workspaces:
  - name: ml
    gpu_quota: 16
    partition: gpu
    account: mlacct
    qos: high
    users: [alice]
    groups: [ml-team]
    default_retries: 2
    max_retries: 5
    default_health: strict
  - name: research
    users: [bob]
    max_retries: 1
admission:
  default_retries: 0
  max_retries: 10
checkpoint:
  signal: USR2
  grace_s: 90
)",
                                "t.yaml");
  EXPECT_TRUE(r.ok());
  return *r.config;
}

const JobUser kAlice{"alice", {"alice"}};
const JobUser kCarol{"carol", {"carol", "ml-team"}};  // member through a group
const JobUser kBob{"bob", {"bob"}};
const JobUser kMallory{"mallory", {"mallory"}};

AdmissionRequest with_workspace(const char* ws) {
  AdmissionRequest r;
  r.options.workspace = ws;
  return r;
}

struct PolicyCase {
  const char* name;
  AdmissionRequest request;
  JobUser user;
  bool accepted;
  const char* message;  // exact message ("" = none)
};

class PolicyTest : public ::testing::TestWithParam<PolicyCase> {};

TEST_P(PolicyTest, DecidesWithMessage) {
  const PolicyCase& c = GetParam();
  AdmissionDecision d = admit_job(test_config(), c.request, c.user);
  EXPECT_EQ(d.accepted, c.accepted);
  EXPECT_EQ(d.message, c.message);
}

AdmissionRequest gpus(AdmissionRequest r, long long n) {
  r.gpus = n;
  return r;
}
AdmissionRequest partition(AdmissionRequest r, const char* p) {
  r.partition = p;
  return r;
}
AdmissionRequest retries(AdmissionRequest r, int n) {
  r.options.retries = n;
  return r;
}
AdmissionRequest licenses(AdmissionRequest r, const char* l) {
  r.licenses = l;
  return r;
}

const PolicyCase kPolicyCases[] = {
    {"member_by_name", with_workspace("ml"), kAlice, true, ""},
    {"member_by_group", with_workspace("ml"), kCarol, true, ""},
    {"non_member", with_workspace("ml"), kBob, false,
     "safe: user 'bob' is not a member of workspace 'ml'; you may use: research"},
    {"non_member_of_anything", with_workspace("ml"), kMallory, false,
     "safe: user 'mallory' is not a member of workspace 'ml'; you are not a member of any workspace; ask an "
     "administrator to add you"},
    {"unknown_workspace", with_workspace("mll"), kAlice, false, "safe: unknown workspace 'mll'; you may use: ml"},
    {"no_workspace_optional", AdmissionRequest{}, kMallory, true, ""},
    {"within_quota", gpus(with_workspace("ml"), 16), kAlice, true, ""},
    {"over_whole_quota", gpus(with_workspace("ml"), 24), kAlice, false,
     "safe: the job asks for 24 GPUs but workspace 'ml' has a quota of 16; ask for at most 16 GPUs or use another "
     "workspace"},
    {"no_quota_workspace_any_size", gpus(with_workspace("research"), 512), kBob, true, ""},
    {"conflicting_partition", partition(with_workspace("ml"), "debug"), kAlice, false,
     "safe: workspace 'ml' runs in partition 'gpu', not 'debug'; drop -p/--partition or use -p gpu"},
    {"same_partition", partition(with_workspace("ml"), "gpu"), kAlice, true, ""},
    {"retries_capped", retries(with_workspace("ml"), 9), kAlice, true,
     "safe: --safe-retries=9 capped to 5 (workspace 'ml' maximum)"},
    {"retries_capped_cluster", retries(AdmissionRequest{}, 20), kAlice, true,
     "safe: --safe-retries=20 capped to 10 (cluster maximum)"},
    {"managed_license_rejected", licenses(with_workspace("ml"), "matlab:1,safe_ws_research:4"), kAlice, false,
     "safe: licenses named safe_ws_* carry workspace GPU quotas and are set by SaFE; remove them from "
     "-L/--licenses"},
    {"license_alternatives_with_quota", licenses(gpus(with_workspace("ml"), 2), "a|b"), kAlice, false,
     "safe: license alternatives (a|b) cannot be combined with workspace 'ml' GPU quota; request the licenses with "
     "',' or submit without -L"},
};

INSTANTIATE_TEST_SUITE_P(Policy, PolicyTest, ::testing::ValuesIn(kPolicyCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Admission, WorkspaceDefaultsFillWhatTheUserLeftOpen) {
  AdmissionDecision d = admit_job(test_config(), gpus(with_workspace("ml"), 8), kAlice);
  ASSERT_TRUE(d.accepted);
  EXPECT_EQ(d.partition, "gpu");
  EXPECT_EQ(d.account, "mlacct");
  EXPECT_EQ(d.qos, "high");
  EXPECT_EQ(d.licenses, "safe_ws_ml:8");
  EXPECT_EQ(d.settings.workspace, "ml");
  EXPECT_EQ(d.settings.retries, 2);
  EXPECT_EQ(d.settings.health, HealthLevel::strict);
  EXPECT_EQ(d.settings.ckpt_signal, (CheckpointSignal{SIGUSR2, 90}));
  EXPECT_EQ(d.settings.gpus, 8);
  EXPECT_TRUE(d.requeue_with_append);
}

TEST(Admission, UserValuesWin) {
  AdmissionRequest r = with_workspace("ml");
  r.account = "other";
  r.qos = "low";
  r.licenses = "matlab:1";
  r.gpus = 4;
  r.options.retries = 0;
  r.options.health = HealthLevel::off;
  r.options.ckpt_signal = CheckpointSignal{SIGTERM, 30};
  r.options.ckpt_dir = "/ckpt/run";
  r.options.hang_timeout = 600;
  AdmissionDecision d = admit_job(test_config(), r, kAlice);
  ASSERT_TRUE(d.accepted);
  EXPECT_FALSE(d.account.has_value());
  EXPECT_FALSE(d.qos.has_value());
  EXPECT_EQ(d.licenses, "matlab:1,safe_ws_ml:4");
  EXPECT_EQ(d.settings.retries, 0);
  EXPECT_FALSE(d.requeue_with_append);
  EXPECT_EQ(d.settings.health, HealthLevel::off);
  EXPECT_EQ(d.settings.ckpt_signal, (CheckpointSignal{SIGTERM, 30}));
  EXPECT_EQ(d.settings.ckpt_dir, "/ckpt/run");
  EXPECT_EQ(d.settings.hang_timeout, 600);
}

TEST(Admission, SignalWithoutLeadTakesConfiguredGrace) {
  AdmissionRequest r;
  r.options.ckpt_signal = CheckpointSignal{SIGUSR1, std::nullopt};
  AdmissionDecision d = admit_job(test_config(), r, kAlice);
  EXPECT_EQ(d.settings.ckpt_signal, (CheckpointSignal{SIGUSR1, 90}));
}

TEST(Admission, NoGpusNoLicense) {
  AdmissionDecision d = admit_job(test_config(), with_workspace("ml"), kAlice);
  EXPECT_FALSE(d.licenses.has_value());
}

TEST(Admission, RequiredWorkspace) {
  SafeConfig config = test_config();
  config.admission.require_workspace = true;
  AdmissionDecision d = admit_job(config, AdmissionRequest{}, kCarol);
  EXPECT_FALSE(d.accepted);
  EXPECT_EQ(d.message, "safe: this cluster requires --safe-workspace=NAME; you may use: ml");
}

}  // namespace
}  // namespace safe
