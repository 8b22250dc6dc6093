// Hot spares' pure decisions: what a pool's reservation holds after a pass (plan_spare_pool) and
// who gets the free spares (grant_spares).
#include "controller/safed/spare_pool.hpp"

#include <gtest/gtest.h>

#include "common/config.hpp"
#include "common/spare_reservation.hpp"

namespace safe {
namespace {

using Names = std::vector<std::string>;

class SparePoolPlanTest : public ::testing::Test {
 protected:
  SparePoolPlanTest() {
    for (int i = 1; i <= 6; ++i) {
      SlurmNode n;
      n.name = "n" + std::to_string(i);
      nodes.push_back(n);
    }
    pool.partition = "gpu";
    pool.count = 1;
    view.config = &pool;
    view.partition_nodes = {"n1", "n2", "n3", "n4", "n5", "n6"};
  }
  SlurmNode& node(const std::string& name) {
    for (auto& n : nodes)
      if (n.name == name) return n;
    throw std::runtime_error(name);
  }
  SparePoolPlan plan() {
    std::map<std::string, const SlurmNode*> states;
    for (const auto& n : nodes) states[n.name] = &n;
    return plan_spare_pool(view, states);
  }
  std::vector<SlurmNode> nodes;
  SparePoolConfig pool;
  SparePoolView view;
};

TEST_F(SparePoolPlanTest, TakesAHealthyIdleNodeOnceAndKeepsIt) {
  node("n1").busy = true;
  node("n2").drain = true;
  SparePoolPlan p = plan();
  EXPECT_EQ(Names{"n3"}, p.nodes) << "the first healthy idle node, in the partition's order";
  EXPECT_EQ(Names{"n3"}, p.free);
  view.reserved = {"n5"};
  EXPECT_EQ(Names{"n5"}, plan().nodes) << "the spare it has stays: no churn";
  pool.count = 2;
  EXPECT_EQ((Names{"n3", "n5"}), plan().nodes);
}

TEST_F(SparePoolPlanTest, ASpareThatFailsItsChecksIsReplacedAndKeptWhileThePoolIsShort) {
  view.reserved = {"n5"};
  node("n5").drain = true;  // SaFE drained it: out for repair
  view.out_for_repair = {"n5"};
  SparePoolPlan p = plan();
  EXPECT_EQ(Names{"n1"}, p.free) << "replaced at once";
  EXPECT_EQ(Names{"n1"}, p.nodes) << "the pool is whole again: the broken spare leaves";
  // A full cluster: no healthy idle node. The broken spare stays, to come back as one.
  for (auto& n : nodes)
    if (n.name != "n5") n.busy = true;
  p = plan();
  EXPECT_TRUE(p.free.empty());
  EXPECT_EQ(Names{"n5"}, p.repairing);
  EXPECT_EQ(Names{"n5"}, p.nodes);
}

TEST_F(SparePoolPlanTest, ANodeSafeTookOutJoinsWhileThePoolIsShortAndComesBackAsASpare) {
  for (auto& n : nodes) n.busy = true;
  node("n2").busy = false;
  node("n2").drain = true;
  view.out_for_repair = {"n2"};
  node("n4").busy = false;
  node("n4").drain = true;  // an administrator's drain: not SaFE's to bring back
  SparePoolPlan p = plan();
  EXPECT_EQ(Names{"n2"}, p.repairing);
  EXPECT_EQ(Names{"n2"}, p.nodes);
  // Repaired: resumed by its checks, idle inside the reservation, before any queued job saw it.
  view.reserved = {"n2"};
  node("n2").drain = false;
  view.out_for_repair.clear();
  p = plan();
  EXPECT_EQ(Names{"n2"}, p.free);
  EXPECT_TRUE(p.repairing.empty());
}

TEST_F(SparePoolPlanTest, ClaimedNodesStayAndANodeAJobRunsOnLeaves) {
  view.reserved = {"n1", "n2", "n5"};
  view.claimed = {"n1", "n2"};  // a failing-over job's own node and the spare it took
  node("n5").busy = true;       // a job started there: an ordinary busy node now
  SparePoolPlan p = plan();
  EXPECT_EQ((Names{"n1", "n2", "n3"}), p.nodes) << "the claims, and a new free spare";
  EXPECT_EQ(Names{"n3"}, p.free);
}

TEST_F(SparePoolPlanTest, NeverTakesANodeOfAnotherReservationOrOutsideThePoolsNodes) {
  view.other_reservations = {"n1", "n2"};
  EXPECT_EQ(Names{"n3"}, plan().nodes);
  pool.nodes = "n[5-6]";
  EXPECT_EQ(Names{"n5"}, plan().nodes);
  pool.count = 0;
  EXPECT_EQ(2, spare_pool_size(pool)) << "count 0: as many as nodes names";
  EXPECT_EQ((Names{"n5", "n6"}), plan().nodes);
  view.partition_nodes = {"n1", "n2", "n3", "n4", "n5"};
  EXPECT_EQ(Names{"n5"}, plan().nodes) << "a named node outside the partition is no spare of it";
}

TEST(SpareGrants, TheLargestJobFirstThenTheOldestFault) {
  // Three jobs want spares; two are free.
  std::vector<SpareRequest> requests = {
      {11, 2, 100, {"n1"}, {}},        // needs 1
      {12, 4, 200, {"n2", "n3"}, {}},  // needs 2: the largest
      {13, 2, 50, {"n4"}, {}},         // needs 1: the oldest fault
  };
  std::vector<SpareGrant> g = grant_spares(requests, {"s1", "s2"});
  ASSERT_EQ(1u, g.size()) << "job 12 takes both; nobody else fits";
  EXPECT_EQ((SpareGrant{12, {"s1", "s2"}, {"n2", "n3"}}), g[0]);
  g = grant_spares(requests, {"s1", "s2", "s3"});
  ASSERT_EQ(2u, g.size());
  EXPECT_EQ(12u, g[0].job_id);
  EXPECT_EQ((SpareGrant{13, {"s3"}, {"n4"}}), g[1]) << "of the equal jobs, the older fault";
}

TEST(SpareGrants, AGrowBackComesAfterEveryFailover) {
  SpareRequest grow{21, 8, 10, {"n1", "n2", "n3", "n4", "n5", "n6", "n7"}, {}, true};  // larger, older
  SpareRequest failover{22, 2, 300, {"n8"}, {}};
  std::vector<SpareGrant> g = grant_spares({grow, failover}, {"s1"});
  ASSERT_EQ(1u, g.size());
  EXPECT_EQ(22u, g[0].job_id) << "a job that is down before one that runs shrunk";
  g = grant_spares({grow, failover}, {"s1", "s2"});
  ASSERT_EQ(2u, g.size());
  EXPECT_EQ(21u, g[1].job_id);
}

TEST(SpareGrants, AJobGetsSparesOnlyWhenItCanStartAtOnceAndNodesAreNotGivenTwice) {
  EXPECT_TRUE(grant_spares({{11, 4, 0, {"n1"}, {}}}, {"s1", "s2"}).empty()) << "needs 3, 2 free: it waits in the queue";
  // Two 2-node jobs saw the same free node n1: the first takes it, the second needs two spares.
  std::vector<SpareGrant> g = grant_spares({{11, 2, 10, {"n1"}, {}}, {12, 2, 20, {"n1"}, {}}}, {"s1", "s2", "s3"});
  ASSERT_EQ(2u, g.size());
  EXPECT_EQ((SpareGrant{11, {"s1"}, {"n1"}}), g[0]);
  EXPECT_EQ((SpareGrant{12, {"s2", "s3"}, {}}), g[1]);
  // A node a job saw as its own is nobody's spare, even when another list named it free.
  g = grant_spares({{11, 2, 10, {"n1", "s1"}, {}}, {12, 2, 20, {}, {}}}, {"s1", "s2", "s3"});
  ASSERT_EQ(2u, g.size());
  EXPECT_EQ((SpareGrant{11, {}, {"n1", "s1"}}), g[0]) << "its own nodes suffice: it takes no spare";
  EXPECT_EQ((SpareGrant{12, {"s2", "s3"}, {}}), g[1]);
}

TEST(SpareGrants, NeverASpareTheJobExcludedOrThatFailedIt) {
  std::vector<SpareGrant> g = grant_spares({{11, 2, 10, {"n1"}, {"s1"}}}, {"s1", "s2"});
  ASSERT_EQ(1u, g.size());
  EXPECT_EQ((SpareGrant{11, {"s2"}, {"n1"}}), g[0]);
  EXPECT_TRUE(grant_spares({{11, 2, 10, {"n1"}, {"s1"}}}, {"s1"}).empty());
}

TEST(SpareReservation, ANameAmongAJobsReservationsIsFound) {
  EXPECT_EQ("safe_spares_gpu", spare_reservation_name("gpu"));
  EXPECT_EQ("safe_spares_gpu", named_spare_reservation("maint,safe_spares_gpu"));
  EXPECT_EQ("Safe_Spares_x", named_spare_reservation("Safe_Spares_x"));
  EXPECT_EQ("", named_spare_reservation("maint"));
  EXPECT_EQ("", named_spare_reservation(""));
  EXPECT_EQ("", named_spare_reservation("my_safe_spares_gpu"));
}

}  // namespace
}  // namespace safe
