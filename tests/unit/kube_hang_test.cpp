// Hang detection for Kubernetes workloads: the decision (kube_hang) and how the classifier and
// the retry rules take it (kube_attempt), without an API server.
#include <gtest/gtest.h>

#include "kube-bridge/kube_attempt.hpp"
#include "kube-bridge/kube_hang.hpp"

namespace safe::bridge {
namespace {

TEST(KubeHang, OnePodWritingIsProgressForAll) {
  std::vector<PodProgress> pods{{"w-a1-0", 1000}, {"w-a1-1", 1090}};
  EXPECT_FALSE(kube_hang_failure(pods, 1100, 60));  // w-a1-1 wrote 10 s ago
  EXPECT_FALSE(kube_hang_failure(pods, 1149, 60));  // 59 s: not yet
  auto f = kube_hang_failure(pods, 1150, 60);       // 60 s: hung
  ASSERT_TRUE(f);
  EXPECT_EQ(f->end, JobEnd::hung);
  EXPECT_EQ(f->hang_detail, "no pod log output for 60 s (hangTimeout=60; silent: w-a1-0 150 s, w-a1-1 60 s)");
  EXPECT_TRUE(f->node_faults.empty());
}

TEST(KubeHang, NoVerdictWithoutTimeoutOrPods) {
  EXPECT_FALSE(kube_hang_failure({{"p", 0}}, 100000, 0));
  EXPECT_FALSE(kube_hang_failure({}, 100000, 60));
}

TEST(KubeHang, PollsAQuarterOfTheTimeoutBetweenOneAndThirtySeconds) {
  EXPECT_EQ(hang_poll_seconds(0), 0);
  EXPECT_EQ(hang_poll_seconds(2), 1);
  EXPECT_EQ(hang_poll_seconds(20), 5);
  EXPECT_EQ(hang_poll_seconds(1200), 30);
}

TEST(KubeHang, ClassifiedAsSafedsHangAndRetriedWithoutExcludingNodes) {
  FailoverConfig failover;
  auto f = kube_hang_failure({{"w-a1-0", 0}}, 120, 100);
  ASSERT_TRUE(f);
  KubeDecision d = decide_kube_failure(*f, 1, 2, failover);
  EXPECT_EQ(d.action, KubeAction::failover);
  EXPECT_EQ(d.classification.failure_class, FailureClass::infra_transient);
  EXPECT_EQ(d.classification.rule, "no progress for its hang timeout");
  EXPECT_TRUE(d.classification.bad_nodes.empty());
  EXPECT_EQ(d.message,
            "infra_transient (no progress for its hang timeout): hang: no pod log output for 120 s (hangTimeout=100; "
            "silent: w-a1-0 120 s)");
  KubeDecision last = decide_kube_failure(*f, 3, 2, failover);  // attempt 3 after 2 retries
  EXPECT_EQ(last.action, KubeAction::fail);
  EXPECT_NE(last.message.find("not retried: retries exhausted (2/2)"), std::string::npos);
}

}  // namespace
}  // namespace safe::bridge
