// Backoff, rate limit, lemon detection and host lists: the small pure pieces of the controller.
#include <gtest/gtest.h>

#include "common/hostlist.hpp"
#include "common/lemon_detection.hpp"
#include "common/requeue_storm_guard.hpp"

namespace safe {
namespace {

struct BackoffCase {
  int done, initial, max;
  long long expected;
};
class BackoffTest : public ::testing::TestWithParam<BackoffCase> {};
TEST_P(BackoffTest, DoublesUpToMax) {
  const auto& c = GetParam();
  EXPECT_EQ(c.expected, failover_backoff_s(c.done, c.initial, c.max));
}
INSTANTIATE_TEST_SUITE_P(Table, BackoffTest,
                         ::testing::Values(BackoffCase{0, 10, 600, 0}, BackoffCase{1, 10, 600, 10},
                                           BackoffCase{2, 10, 600, 20}, BackoffCase{3, 10, 600, 40},
                                           BackoffCase{7, 10, 600, 600}, BackoffCase{40, 10, 600, 600},
                                           BackoffCase{3, 0, 600, 0}, BackoffCase{2, 10, 15, 15}));

TEST(RateLimiter, NodeFaultsPerMinuteThenRefusedUntilTheWindowMoves) {
  FailoverRateLimiter limiter(3);
  EXPECT_TRUE(limiter.try_acquire(100, "workspace ml", true));
  EXPECT_TRUE(limiter.try_acquire(100, "workspace cv", true));
  EXPECT_TRUE(limiter.try_acquire(130, "workspace ml", true));
  EXPECT_FALSE(limiter.try_acquire(150, "workspace cv", true));
  EXPECT_EQ(3, limiter.used(159));
  EXPECT_TRUE(limiter.try_acquire(160, "workspace ml", true));  // the two at 100 left the window
  EXPECT_TRUE(limiter.try_acquire(160, "workspace ml", true));
  EXPECT_FALSE(limiter.try_acquire(160, "workspace ml", true));
}

TEST(RateLimiter, CountsFailoversRecordedBeforeARestart) {
  FailoverRateLimiter limiter(2);
  limiter.record(95, "workspace ml", true);
  limiter.record(90, "workspace ml", true);
  EXPECT_FALSE(limiter.try_acquire(100, "workspace ml", true));
  EXPECT_TRUE(limiter.try_acquire(151, "workspace ml", true));
}

// One tenant's jobs that keep exiting 75 or hanging can use up their own share only: a node
// fault anywhere still fails over at once, and another tenant still gets its share.
TEST(RateLimiter, ATenantsOwnFailuresNeverDelayNodeFaultsOrOtherTenants) {
  FailoverRateLimiter limiter(4);
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(limiter.try_acquire(100, "user 1000", false)) << i;
  EXPECT_FALSE(limiter.try_acquire(101, "user 1000", false)) << "alone, it has the whole limit and no more";
  EXPECT_TRUE(limiter.try_acquire(102, "workspace ml", true)) << "node faults have a budget of their own";
  EXPECT_TRUE(limiter.try_acquire(103, "workspace cv", false)) << "another tenant gets its share at once";
  EXPECT_EQ(2, limiter.tenant_share(103));
  EXPECT_TRUE(limiter.try_acquire(104, "workspace cv", false));
  EXPECT_FALSE(limiter.try_acquire(105, "workspace cv", false)) << "its share of 4 among 2 is 2";
  EXPECT_FALSE(limiter.try_acquire(106, "user 1000", false));
  EXPECT_TRUE(limiter.try_acquire(161, "user 1000", false)) << "the window moved on";
}

struct LemonCase {
  const char* name;
  std::vector<long long> faults;
  long long now;
  int k, window;
  bool lemon;
};
class LemonTest : public ::testing::TestWithParam<LemonCase> {};
TEST_P(LemonTest, KFaultsInWindow) {
  const auto& c = GetParam();
  EXPECT_EQ(c.lemon, is_lemon(c.faults, c.now, c.k, c.window));
}
INSTANTIATE_TEST_SUITE_P(Table, LemonTest,
                         ::testing::Values(LemonCase{"ThreeInWindow", {10, 20, 30}, 40, 3, 100, true},
                                           LemonCase{"TwoOfThreeInWindow", {10, 200, 210}, 250, 3, 100, false},
                                           LemonCase{"OldFaultsForgotten", {1, 2, 3}, 1000, 3, 100, false},
                                           LemonCase{"OneIsEnough", {5}, 5, 1, 10, true},
                                           LemonCase{"None", {}, 5, 1, 10, false}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Lemon, QuarantineReasonHasThePrefixAndSaysHowToRelease) {
  std::string r = quarantine_reason("n3", 3, 86400, "SaFE: gpu0 uncorrectable ECC=2");
  EXPECT_EQ(0u, r.find("SaFE-quarantine: 3 faults in 86400s (last: gpu0 uncorrectable ECC=2)"));
  EXPECT_NE(std::string::npos, r.find("safectl node release n3"));
  EXPECT_NE(0u, r.find(kSafeDrainPrefix));  // the health checker's prefix does not match it
}

TEST(Hostlist, ExpandsRangesListsAndPadding) {
  EXPECT_EQ((std::vector<std::string>{"n1", "n2", "n3"}), expand_hostlist("n[1-3]"));
  EXPECT_EQ((std::vector<std::string>{"n1", "n3", "n4", "gpu07"}), expand_hostlist("n[1,3-4],gpu07"));
  EXPECT_EQ((std::vector<std::string>{"a01", "a02"}), expand_hostlist("a[01-02]"));
  EXPECT_EQ((std::vector<std::string>{"r1n1", "r1n2"}), expand_hostlist("r1n[1-2]"));
  EXPECT_TRUE(expand_hostlist("").empty());
  EXPECT_EQ("n1,n2", join_hostlist({"n1", "n2", "n1", ""}));
}

}  // namespace
}  // namespace safe
