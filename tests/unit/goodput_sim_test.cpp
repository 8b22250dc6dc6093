// The goodput simulation (tests/goodput_sim) on hand-made traces whose outcome follows from the
// costs and the controller's decisions: no faults, one GPU fault under each policy, and a job that
// needs every node of its cluster.
#include <gtest/gtest.h>

#include "tests/goodput_sim/simulation.hpp"

using namespace safe::sim;

namespace {

// Causes in Llama 3's table (scenario.cpp).
constexpr int kFaultyGpu = 0, kNetwork = 2, kSoftwareBug = 9;

Scenario one_day() {
  Scenario s = llama3(true);
  s.name = "test";
  s.days = 1;
  s.nodes = 4;
  return s;
}

Trace one_job(int cluster_nodes, std::vector<TraceFault> faults, double work_s = -1) {
  Trace t;
  t.jobs.push_back({0, 4, work_s});
  t.faults = std::move(faults);
  t.lemon.assign(cluster_nodes, false);
  t.cluster_nodes = cluster_nodes;
  return t;
}

SimResult run(Policy p, const Trace& t, int spares = 2) {
  return simulate(one_day(), t, {p, 30, spares});
}

}  // namespace

TEST(GoodputSim, WithoutFaultsAJobLosesOnlyItsStartAndItsCheckpoints) {
  Trace t = one_job(6, {});
  // Started at 0, computing from 180 s, 47 cycles of 30 min + a 10 s save, then 1,150 s more.
  double computed = 47 * 1800 + 1150;
  for (Policy p : {Policy::plain, Policy::primus, Policy::safe}) {
    SimResult r = run(p, t);
    EXPECT_DOUBLE_EQ(computed / 86400, r.ettr) << to_string(p);
    EXPECT_DOUBLE_EQ(47 * 10 * 32, r.time.checkpoint) << to_string(p);
    EXPECT_DOUBLE_EQ(180 * 32, r.time.startup) << to_string(p);
    EXPECT_EQ(0, r.restarts);
  }
}

TEST(GoodputSim, AGpuFaultIsRepairedAsEachPolicyWouldRepairIt) {
  Trace t = one_job(6, {{10000, 0, -1, kFaultyGpu, 3600, false}});
  // Plain Slurm: nobody sees the GPU; the admin drains n1 and resubmits 15 minutes later.
  SimResult plain = run(Policy::plain, t);
  ASSERT_EQ(1u, plain.mttr_s.size());
  EXPECT_DOUBLE_EQ(900, plain.mttr_s[0]);
  EXPECT_EQ(1, plain.human_resubmits);
  // Primus-SaFE retries at once, twice onto n1 (each fails 60 s in), until its node agent's run
  // at 10,200 s taints n1: running on healthy nodes at 10,210 s.
  SimResult primus = run(Policy::primus, t);
  ASSERT_EQ(1u, primus.mttr_s.size());
  EXPECT_DOUBLE_EQ(210, primus.mttr_s[0]);
  EXPECT_EQ(3, primus.restarts);
  // SaFE: the epilog drains n1 and the failure is a node fault; safed's next pass requeues,
  // excludes n1 and, the two idle nodes being too few for the job, lets it back on the nodes it
  // left after the revocation's second: 10,001 + 2 s.
  SimResult safe = run(Policy::safe, t);
  ASSERT_EQ(1u, safe.mttr_s.size());
  EXPECT_DOUBLE_EQ(3, safe.mttr_s[0]);
  EXPECT_EQ(1, safe.classified["node_fault"]);
  EXPECT_EQ(0, safe.human_resubmits);
  // Lost to the fault: the 770 s computed after the checkpoint of 9,000 s (5 cycles in), the
  // wait, and the restart's start and checkpoint load.
  EXPECT_DOUBLE_EQ((770 + 3 + 180 + 120) * 32, safe.time.lost_by_cause["faulty GPU"]);
  for (const SimResult* r : {&plain, &primus, &safe}) {
    const TimeAccount& a = r->time;
    EXPECT_NEAR(a.allocated, a.productive + a.checkpoint + a.startup + a.queued + a.lost(), 1e-6)
        << to_string(r->settings.policy);
    EXPECT_EQ(1, r->faults.interrupted);
  }
}

// Every node of the cluster is the job's: excluding the one that failed would keep the job
// pending for good (place_restart did until the simulation showed it). SaFE waits for the repair
// (an hour) and for the health checker to resume the node after 3 clean runs 300 s apart.
TEST(GoodputSim, AJobThatNeedsEveryNodeRunsAgainOnceItsBadNodeIsBack) {
  Trace t = one_job(4, {{10000, 0, -1, kFaultyGpu, 3600, false}});
  SimResult safe = run(Policy::safe, t, 0);
  ASSERT_EQ(1u, safe.mttr_s.size());
  // Repaired at 13,600 s; clean runs at 13,800, 14,100 and 14,400 s: resumed, and running again.
  EXPECT_DOUBLE_EQ(4400, safe.mttr_s[0]);
  EXPECT_DOUBLE_EQ(4400 - 3, safe.waiting_for_nodes_s) << "eligible from the revocation's second on";
}

// A bug that strikes again on every restart until its fix (2 h later) is repaired once, by the
// fix: Primus-SaFE's retries into it are not repairs.
TEST(GoodputSim, ARecurringBugIsRepairedByItsFixNotByEachRetry) {
  Trace t = one_job(6, {{10000, -1, 0, kSoftwareBug, 0, true}});
  for (Policy p : {Policy::plain, Policy::primus, Policy::safe}) {
    SimResult r = run(p, t);
    ASSERT_EQ(1u, r.mttr_s.size()) << to_string(p);
    // A person resubmits once it is fixed; Primus-SaFE's next retry after the fix runs on.
    if (p == Policy::primus) {
      EXPECT_GE(r.mttr_s[0], 7200);
      EXPECT_LT(r.mttr_s[0], 7200 + 30 + 300 + 300);
      EXPECT_GT(r.restarts, 5);
    } else {
      EXPECT_DOUBLE_EQ(7200, r.mttr_s[0]) << to_string(p);
      EXPECT_EQ(1, r.human_resubmits) << to_string(p);
    }
  }
}

// A job that hangs shortly before it would have finished does not finish then: it finishes its
// work, all of it, in a later attempt.
TEST(GoodputSim, AHungJobFinishesItsWorkOnlyInALaterAttempt) {
  Trace t = one_job(6, {{20000, 0, -1, kNetwork, 3600, false}}, 20000);
  for (Policy p : {Policy::plain, Policy::primus, Policy::safe}) {
    SimResult r = run(p, t);
    EXPECT_EQ(1, r.jobs_completed) << to_string(p);
    EXPECT_EQ(1, r.restarts) << to_string(p);
    EXPECT_DOUBLE_EQ(20000 * 32, r.time.productive) << to_string(p) << ": the work, kept once";
  }
}
