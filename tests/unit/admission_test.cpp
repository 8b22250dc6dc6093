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
     "safe: the job can get 24 GPUs but workspace 'ml' has a quota of 16; ask for at most 16 GPUs or use another "
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
    // Slurm also splits at ';' and skips empty entries: ";safe_ws_research:16" names the license too.
    {"managed_license_after_a_semicolon", licenses(with_workspace("ml"), ";safe_ws_research:16"), kAlice, false,
     "safe: licenses named safe_ws_* carry workspace GPU quotas and are set by SaFE; remove them from "
     "-L/--licenses"},
    {"managed_license_with_equals_and_blanks", licenses(AdmissionRequest{}, "matlab=1; safe_ws_ml=8"), kMallory, false,
     "safe: licenses named safe_ws_* carry workspace GPU quotas and are set by SaFE; remove them from "
     "-L/--licenses"},
    {"managed_license_as_alternative", licenses(AdmissionRequest{}, "matlab|safe_ws_ml:8"), kMallory, false,
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

TEST(Admission, LicenseNamesAsSlurmSplitsThem) {
  EXPECT_EQ(license_names(""), std::vector<std::string>{});
  EXPECT_EQ(license_names("a:1,b;c|d=2,,;e@srv:3"), (std::vector<std::string>{"a", "b", "c", "d", "e@srv"}));
  EXPECT_EQ(license_names(";;safe_ws_x:8"), std::vector<std::string>{"safe_ws_x"});
}

// A partition that belongs to a workspace is that workspace's, however the job got there.
struct ChoiceCase {
  const char* name;
  const char* workspace;       // --safe-workspace, "" none
  const char* partition;       // -p, "" none
  const char* default_partition;  // Slurm's, "" unknown
  JobUser user;
  const char* chosen;          // workspace chosen, "" none
  const char* rejection;       // part of the message, "" none
};
class ChoiceTest : public ::testing::TestWithParam<ChoiceCase> {};
TEST_P(ChoiceTest, Chooses) {
  const ChoiceCase& c = GetParam();
  SafeConfig config = test_config();
  WorkspaceConfig shared;
  shared.name = "shared-a";
  shared.partition = "shared";
  shared.users = {"alice", "bob"};
  config.workspaces.push_back(shared);
  shared.name = "shared-b";
  config.workspaces.push_back(shared);
  SafeOptions o;
  if (*c.workspace) o.workspace = c.workspace;
  std::string d = c.default_partition;
  WorkspaceChoice got = choose_workspace(config, o, c.partition, d.empty() ? nullptr : &d, c.user);
  EXPECT_EQ(std::string(c.chosen), got.workspace ? got.workspace->name : "");
  if (*c.rejection) EXPECT_NE(got.rejection.find(c.rejection), std::string::npos) << got.rejection;
  else EXPECT_EQ(got.rejection, "");
}
INSTANTIATE_TEST_SUITE_P(
    Choices, ChoiceTest,
    ::testing::Values(
        ChoiceCase{"named", "ml", "", "", kAlice, "ml", ""},
        ChoiceCase{"partition_makes_it_the_workspaces_job", "", "gpu", "", kAlice, "ml", ""},
        ChoiceCase{"partition_of_a_workspace_needs_membership", "", "gpu", "", kMallory, "",
                   "partition 'gpu' belongs to workspace 'ml', of which user 'mallory' is not a member"},
        ChoiceCase{"default_partition_of_a_workspace", "", "", "gpu", kMallory, "", "belongs to workspace 'ml'"},
        ChoiceCase{"default_partition_unknown", "", "", "", kMallory, "", "cannot tell which partition"},
        ChoiceCase{"other_partition", "", "debug", "", kMallory, "", ""},
        ChoiceCase{"other_default_partition", "", "", "debug", kMallory, "", ""},
        ChoiceCase{"partition_list_with_a_workspaces", "", "debug,gpu", "", kAlice, "", "submit to it alone"},
        ChoiceCase{"partition_of_another_workspace", "research", "gpu", "", kBob, "",
                   "partition 'gpu' belongs to workspace 'ml', not to 'research'"},
        ChoiceCase{"default_of_another_workspace", "research", "", "gpu", kBob, "", "belongs to workspace 'ml'"},
        ChoiceCase{"shared_partition", "", "shared", "", kAlice, "", "shared by workspaces 'shared-a', 'shared-b'"},
        ChoiceCase{"shared_partition_named", "shared-b", "shared", "", kAlice, "shared-b", ""}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Admission, RequiredWorkspace) {
  SafeConfig config = test_config();
  config.admission.require_workspace = true;
  AdmissionDecision d = admit_job(config, AdmissionRequest{}, kCarol);
  EXPECT_FALSE(d.accepted);
  EXPECT_EQ(d.message, "safe: this cluster requires --safe-workspace=NAME; you may use: ml");
}

}  // namespace
}  // namespace safe
