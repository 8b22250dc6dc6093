// Hysteresis tables: how many failing runs drain, how many passing runs resume, what unknown does.
#include <gtest/gtest.h>

#include "common/health_history.hpp"

namespace safe {
namespace {

CheckResult r(const char* check, CheckStatus status, Severity sev = Severity::critical, bool urgent = false) {
  return {check, status, sev, urgent, std::string(check) + " detail"};
}

constexpr CheckStatus P = CheckStatus::pass, F = CheckStatus::fail, U = CheckStatus::unknown;

struct HysteresisCase {
  const char* name;
  Severity severity;
  bool urgent;
  std::vector<CheckStatus> runs;   // one check's status per run
  std::vector<char> expected;      // per run: 'D' drain cause, 'p' pending, 'w' warning, 'r' all recovered, '.' none
};

class HysteresisTest : public ::testing::TestWithParam<HysteresisCase> {};

TEST_P(HysteresisTest, VerdictPerRun) {
  const HysteresisCase& c = GetParam();
  HysteresisPolicy policy{2, 1, 3, 3};
  HealthHistory history;
  ASSERT_EQ(c.runs.size(), c.expected.size());
  for (std::size_t i = 0; i < c.runs.size(); ++i) {
    RunVerdict v = apply_run(history, {r("x", c.runs[i], c.severity, c.urgent), r("other", P)}, policy);
    char got = v.drain_cause ? 'D' : !v.pending.empty() ? 'p' : !v.warnings.empty() ? 'w' : v.all_recovered ? 'r' : '.';
    EXPECT_EQ(got, c.expected[i]) << c.name << " run " << i;
  }
}

const HysteresisCase kHysteresisCases[] = {
    {"urgent_drains_on_first_failure", Severity::critical, true, {F}, {'D'}},
    {"ordinary_critical_needs_two", Severity::critical, false, {F, F}, {'p', 'D'}},
    {"a_pass_breaks_the_fail_streak", Severity::critical, false, {F, P, F, P}, {'p', '.', 'p', '.'}},
    {"resume_needs_three_passes_after_failing", Severity::critical, true, {F, P, P, P, P}, {'D', '.', '.', 'r', 'r'}},
    {"healthy_from_start_is_recovered_after_m_runs", Severity::critical, false, {P, P, P}, {'.', '.', 'r'}},
    {"single_unknown_is_not_a_failure", Severity::critical, true, {U, P, U, P}, {'.', '.', 'r', 'r'}},
    {"repeated_unknown_fails", Severity::critical, true, {U, U, U}, {'.', '.', 'D'}},
    {"unknown_does_not_count_as_a_pass", Severity::critical, true, {F, P, U, P, P}, {'D', '.', '.', '.', 'r'}},
    {"warnings_never_drain", Severity::warning, false, {F, F, F, F}, {'w', 'w', 'w', 'w'}},
    {"warning_does_not_block_recovery", Severity::warning, false, {P, P, F}, {'.', '.', 'w'}},
};

INSTANTIATE_TEST_SUITE_P(Runs, HysteresisTest, ::testing::ValuesIn(kHysteresisCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Hysteresis, RepeatedUnknownNamesTheTimeout) {
  HealthHistory h;
  HysteresisPolicy policy{2, 1, 3, 2};
  apply_run(h, {r("mounts", U)}, policy);
  RunVerdict v = apply_run(h, {r("mounts", U)}, policy);
  ASSERT_TRUE(v.pending.size() == 1 || v.drain_cause);
  EXPECT_NE(v.effective[0].detail.find("unknown 2 runs"), std::string::npos) << v.effective[0].detail;
}

TEST(Hysteresis, LostHistoryCannotResumeAfterOnePass) {
  HealthHistory fresh;  // e.g. the state directory was wiped while the node stayed drained
  RunVerdict v = apply_run(fresh, {r("x", P)}, {2, 1, 3, 3});
  EXPECT_FALSE(v.all_recovered);
}

TEST(Hysteresis, HistorySurvivesJsonRoundTrip) {
  HealthHistory h;
  HysteresisPolicy policy{2, 1, 3, 3};
  apply_run(h, {r("x", F), r("y", U)}, policy);
  h.slurmd_instance = "123:456";
  h.last_run = 1700000000;
  HealthHistory back = health_history_from_json(to_json(h));
  EXPECT_EQ(back.slurmd_instance, "123:456");
  EXPECT_EQ(back.last_run, 1700000000);
  EXPECT_EQ(back.clean_runs, 0);
  EXPECT_EQ(back.checks["x"].fails, 1);
  EXPECT_TRUE(back.checks["x"].recovering);
  EXPECT_EQ(back.checks["y"].unknowns, 1);
  // The second failure after the "restart" drains, as it would have without one.
  RunVerdict v = apply_run(back, {r("x", F)}, policy);
  EXPECT_TRUE(v.drain_cause.has_value());
}

TEST(Hysteresis, DamagedHistoryReadsAsEmpty) {
  EXPECT_TRUE(health_history_from_json("{not json").checks.empty());
  EXPECT_TRUE(health_history_from_json("[1,2]").checks.empty());
  EXPECT_EQ(health_history_from_json("{\"checks\":{\"x\":{\"fails\":-5}}}").checks["x"].fails, 0);
}

}  // namespace
}  // namespace safe
