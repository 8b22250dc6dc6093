// Kernel-log patterns and their time windows, from strings and from the fixture trees' /dev/kmsg.
#include <gtest/gtest.h>

#include "healthcheck/kmsg_check.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

constexpr std::uint64_t kSecond = 1000000;

struct KmsgCase {
  const char* name;
  std::vector<KmsgRecord> records;
  CheckStatus critical;
  CheckStatus warning;
  const char* detail_part;
};

class KmsgTest : public ::testing::TestWithParam<KmsgCase> {};

TEST_P(KmsgTest, Evaluates) {
  const KmsgCase& c = GetParam();
  HealthThresholds t;  // window 7200 s, storm 11000 in 600 s
  t.pcie_bus_error_storm_count = 3;  // keeps the storm cases small
  auto results = evaluate_kmsg(c.records, 10000 * kSecond, t);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, c.critical) << c.name << ": " << results[0].detail;
  EXPECT_EQ(results[1].status, c.warning) << c.name << ": " << results[1].detail;
  std::string details = results[0].detail + "|" + results[1].detail;
  EXPECT_NE(details.find(c.detail_part), std::string::npos) << c.name << ": " << details;
}

constexpr CheckStatus P = CheckStatus::pass, F = CheckStatus::fail;
const std::uint64_t kRecent = 9900 * kSecond, kOld = 2000 * kSecond;

const KmsgCase kKmsgCases[] = {
    {"quiet_log", {{kRecent, "usb 1-1: new high-speed USB device"}}, P, P, ""},
    {"critical_xid_recent", {{kRecent, "NVRM: Xid (PCI:0000:c1:00): 79, pid=1, GPU has fallen off the bus."}}, F, P, "NVIDIA XID 79"},
    {"critical_xid_outside_window", {{kOld, "NVRM: Xid (PCI:0000:c1:00): 79, pid=1"}}, P, P, ""},
    {"warning_xid", {{kRecent, "NVRM: Xid (PCI:0000:c1:00): 13, Graphics Exception"}}, P, F, "NVIDIA XID 13"},
    {"unlisted_xid_ignored", {{kRecent, "NVRM: Xid (PCI:0000:c1:00): 999, whatever"}}, P, P, ""},
    {"amdgpu_uncorrectable", {{kRecent, "amdgpu 0000:c1:00.0: amdgpu: 1 uncorrectable hardware errors detected in umc block"}}, F, P, "amdgpu uncorrectable"},
    {"amdgpu_correctable_is_warning", {{kRecent, "amdgpu 0000:c1:00.0: amdgpu: 3 correctable hardware errors detected in umc block"}}, P, F, "correctable"},
    {"amdgpu_reset", {{kRecent, "amdgpu 0000:c1:00.0: amdgpu: GPU reset begin!"}}, F, P, "GPU reset"},
    {"xgmi_link_error", {{kRecent, "amdgpu: xgmi link error detected on link 3"}}, F, P, "XGMI link error"},
    {"mce", {{kRecent, "mce: [Hardware Error]: Machine check events logged"}}, F, P, "machine check"},
    {"bus_errors_at_storm_limit", {{kRecent, "PCIe Bus Error: severity=Corrected"}, {kRecent, "PCIe Bus Error: x"}, {kRecent, "PCIe Bus Error: x"}}, P, P, ""},
    {"bus_error_storm",
     {{kRecent, "PCIe Bus Error: a"}, {kRecent, "PCIe Bus Error: b"}, {kRecent, "PCIe Bus Error: c"}, {kRecent, "PCIe Bus Error: d"}}, F, P,
     "PCIe bus error storm: 4 in 600 s"},
    {"bus_errors_spread_beyond_storm_window",
     {{kRecent - 1000 * kSecond, "PCIe Bus Error: a"}, {kRecent - 1000 * kSecond, "PCIe Bus Error: b"}, {kRecent, "PCIe Bus Error: c"}, {kRecent, "PCIe Bus Error: d"}},
     P, P, ""},
    {"latest_named_first", {{kRecent, "NVRM: Xid (PCI:0000:c1:00): 48, x"}, {kRecent + 1, "NVRM: Xid (PCI:0000:c1:00): 79, x"}}, F, P, "XID 79 (+1 more)"},
};

INSTANTIATE_TEST_SUITE_P(Patterns, KmsgTest, ::testing::ValuesIn(kKmsgCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(KmsgParse, RecordsAndContinuationLines) {
  auto records = parse_kmsg("6,1,100,-;hello\n SUBSYSTEM=pci\n4,2,200,-,caller=T1;world; with semicolon\nbroken line\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].usec, 100u);
  EXPECT_EQ(records[0].message, "hello");
  EXPECT_EQ(records[1].message, "world; with semicolon");
}

TEST(KmsgFixture, HealthyNodeOldXidIsOutsideTheWindow) {
  test::TempDir dir;
  NodeFs fs(test::copy_fixture(dir, "node-healthy"));
  auto results = run_kmsg_check(fs, HealthThresholds{});
  EXPECT_EQ(results[0].status, CheckStatus::pass) << results[0].detail;
  EXPECT_EQ(results[1].status, CheckStatus::pass) << results[1].detail;
}

TEST(KmsgFixture, FaultyNodeHasCriticalAndWarningXids) {
  test::TempDir dir;
  NodeFs fs(test::copy_fixture(dir, "node-faulty"));
  auto results = run_kmsg_check(fs, HealthThresholds{});
  EXPECT_EQ(results[0].status, CheckStatus::fail);
  EXPECT_EQ(results[0].detail, "kernel log: NVIDIA XID 79");
  EXPECT_EQ(results[1].status, CheckStatus::fail);
  EXPECT_EQ(results[1].detail, "kernel log: NVIDIA XID 13");
}

TEST(KmsgFixture, UnreadableLogIsUnknownNotFailed) {
  test::TempDir dir;
  auto results = run_kmsg_check(NodeFs(dir.path()), HealthThresholds{});
  EXPECT_EQ(results[0].status, CheckStatus::unknown);
  EXPECT_EQ(results[1].status, CheckStatus::unknown);
}

}  // namespace
}  // namespace safe
