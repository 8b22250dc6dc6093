// Services' replicas: the pure rules of service_plan.hpp (restart, back-off, crash-looping,
// replacement away from an unhealthy node, liveness, scaling, adoption), the record's file and
// the metric reader.
#include <gtest/gtest.h>

#include "kube-bridge/replica_probe.hpp"
#include "kube-bridge/service_plan.hpp"
#include "kube-bridge/service_view.hpp"

namespace safe::bridge {
namespace {

ServiceRecord service(int replicas, int min = 0, int max = 0) {
  ServiceRecord r;
  SpecParse p = parse_workload_spec(R"({"name":"web","kind":"service","command":["serve"],"port":8000,"replicas":)" +
                                    std::to_string(replicas) + R"(,"minReplicas":)" + std::to_string(min ? min : replicas) +
                                    R"(,"maxReplicas":)" + std::to_string(max ? max : replicas) +
                                    (min != max ? R"(,"scaling":{"metric":"queue","targetPerReplica":10,"cooldownSeconds":30})" : "") +
                                    "}");
  EXPECT_TRUE(p.spec) << (p.errors.empty() ? "" : p.errors[0].message);
  r.spec = *p.spec;
  r.desired = replicas;
  r.uid = 1001;
  return r;
}

ReplicaJobObservation running(const std::string& node, bool ready = true) {
  ReplicaJobObservation o;
  o.live = o.running = true;
  o.node = node;
  o.host = "10.0.0." + node.substr(1);
  o.ready = ready;
  o.start_time = 1000;
  return o;
}

ReplicaJobObservation pending(const std::string& reason = "") {
  ReplicaJobObservation o;
  o.live = true;
  o.pending_reason = reason;
  return o;
}

ReplicaJobObservation ended(int exit_code, std::time_t start, const std::string& node = "n1") {
  ReplicaJobObservation o;
  o.exit_code = exit_code;
  o.node = node;
  o.start_time = start;
  return o;
}

class ServicePlanTest : public ::testing::Test {
 protected:
  // One pass at `now` with the jobs as given; starts get job ids 100, 101, ...
  ServicePlan pass(ServiceRecord& r, std::time_t now, int budget = 100) {
    seen.now = now;
    ServicePlan plan = plan_service(r, seen, budget);
    for (const auto& s : plan.starts) {
      record_start(r, s, next_id, now);
      seen.jobs[next_id] = pending();
      ++next_id;
    }
    for (auto id : plan.cancels) seen.jobs[id].live = false;
    return plan;
  }
  // Passes at `now` until every replica has a job, each new job placed by "Slurm" on a node of its
  // own (n1, n2, ...), running, not ready yet: the service's jobs start one at a time while they
  // can spread. All the starts made.
  ServicePlan start_all(ServiceRecord& r, std::time_t now) {
    ServicePlan all;
    for (int i = 0; i < 64; ++i) {
      std::uint32_t first = next_id;
      ServicePlan plan = pass(r, now);
      for (std::uint32_t id = first; id < next_id; ++id) seen.jobs[id] = running("n" + std::to_string((id - 100) % 4 + 1), false);
      all.starts.insert(all.starts.end(), plan.starts.begin(), plan.starts.end());
      all.cancels.insert(all.cancels.end(), plan.cancels.begin(), plan.cancels.end());
      if (plan.starts.empty()) break;
    }
    return all;
  }
  std::vector<std::string> event_types(const ServiceRecord& r) {
    std::vector<std::string> out;
    for (const auto& e : r.events) out.push_back(e.type);
    return out;
  }
  ServiceObservation seen = [] {
    ServiceObservation s;
    s.usable_nodes = s.free_nodes = {"n1", "n2", "n3", "n4"};
    return s;
  }();
  std::uint32_t next_id = 100;
};

TEST_F(ServicePlanTest, StartsEveryReplicaEachOnAPortOfItsOwn) {
  ServiceRecord r = service(3);
  ServicePlan plan = start_all(r, 1000);
  ASSERT_EQ(plan.starts.size(), 3u);
  EXPECT_EQ(plan.starts[0].port, 8000);
  EXPECT_EQ(plan.starts[1].port, 8001);
  EXPECT_EQ(plan.starts[2].port, 8002);
  EXPECT_EQ(r.replicas[2].job_id, 102u);
  EXPECT_TRUE(pass(r, 1001).starts.empty());  // all three have their jobs
  // Replica 1's job ends: its next job takes the lowest port free, its old one.
  seen.jobs[101] = ended(1, 900);
  pass(r, 1002);
  plan = pass(r, r.replicas[1].not_before);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].port, 8001);
}

TEST_F(ServicePlanTest, AReplicaFailingByItselfBacksOffThenIsCrashLoopingWhileTheOthersRun) {
  ServiceRecord r = service(2);
  start_all(r, 1000);
  seen.jobs[101] = running("n2");
  std::time_t t = 1010;
  std::vector<int> waits;
  for (int failure = 1; failure <= 4; ++failure) {
    std::uint32_t job = r.replicas[0].job_id;
    seen.jobs[job] = ended(1, t - 2);
    ServicePlan plan = pass(r, t);
    EXPECT_TRUE(plan.starts.empty()) << "failure " << failure << ": restarted before its back-off";
    waits.push_back(static_cast<int>(r.replicas[0].not_before - t));
    EXPECT_EQ(r.replicas[0].crash_looping, failure >= kCrashLoopFailures) << failure;
    t = r.replicas[0].not_before;
    plan = pass(r, t);
    ASSERT_EQ(plan.starts.size(), 1u) << "failure " << failure;
    EXPECT_EQ(plan.starts[0].index, 0);
    EXPECT_EQ(r.replicas[1].job_id, 101u) << "the other replica is left alone";
  }
  EXPECT_EQ(waits, (std::vector<int>{1, 2, 4, 8}));
  EXPECT_EQ(r.replicas[0].restarts, 4);
  int crash_events = 0;
  for (const auto& e : r.events) crash_events += e.type == "CrashLooping";
  EXPECT_EQ(crash_events, 1);
  EXPECT_NE(r.replicas[0].last_failure.find("exit code 1"), std::string::npos) << r.replicas[0].last_failure;

  // Ready for a minute: the loop is over, and the next failure starts counting again.
  seen.jobs[r.replicas[0].job_id] = running("n1");
  pass(r, t + 1);
  pass(r, t + 1 + kStableRunS);
  EXPECT_FALSE(r.replicas[0].crash_looping);
  EXPECT_EQ(r.replicas[0].failures, 0);
}

TEST_F(ServicePlanTest, TheBackOffStopsGrowingAtItsMaximum) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  std::time_t t = 1000;
  for (int i = 0; i < 12; ++i) {
    seen.jobs[r.replicas[0].job_id] = ended(1, t);
    pass(r, t + 1);
    t = r.replicas[0].not_before;
    pass(r, t);
  }
  seen.jobs[r.replicas[0].job_id] = ended(1, t);
  pass(r, t + 1);
  EXPECT_EQ(r.replicas[0].not_before - (t + 1), kMaxBackoffS);
}

TEST_F(ServicePlanTest, AReplicaLostWithItsNodeStartsAtOnceElsewhereWithoutCountingAFailure) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  ReplicaJobObservation lost = ended(0, 900, "n3");
  lost.node_fault = true;
  seen.jobs[100] = lost;
  ServicePlan plan = pass(r, 1010);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].excluded_nodes, std::vector<std::string>{"n3"});
  EXPECT_EQ(r.replicas[0].failures, 0);
  EXPECT_EQ(event_types(r).back(), "ReplicaStarted");
}

TEST_F(ServicePlanTest, AReplicaOnAnUnhealthyNodeIsReplacedBeforeItsJobIsCancelled) {
  ServiceRecord r = service(2);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[101] = running("n2");
  pass(r, 1001);
  seen.jobs[100].node_unhealthy = true;  // n1 drained under it (a GPU fault)
  ServicePlan plan = pass(r, 1005);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_TRUE(plan.starts[0].replacement);
  EXPECT_EQ(plan.starts[0].excluded_nodes, (std::vector<std::string>{"n1", "n2"})) << "its node, and the other replica's";
  EXPECT_TRUE(plan.cancels.empty()) << "the old job serves until its replacement is ready";
  EXPECT_EQ(r.replicas[0].replacement_job, 102u);
  // Starting: nothing changes, and no second replacement.
  seen.jobs[102] = running("n3", false);
  plan = pass(r, 1006);
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_TRUE(plan.cancels.empty());
  // Ready: it takes over, the old job goes.
  seen.jobs[102].ready = true;
  plan = pass(r, 1008);
  EXPECT_EQ(plan.cancels, std::vector<std::uint32_t>{100});
  EXPECT_EQ(r.replicas[0].job_id, 102u);
  EXPECT_EQ(r.replicas[0].replacement_job, 0u);
  // The cancelled job's end is no failure.
  seen.jobs[100] = ended(0, 1000);
  plan = pass(r, 1010);
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_EQ(r.replicas[0].restarts, 0);
  EXPECT_EQ(event_types(r).back(), "ReplicaReplaced");
}

TEST_F(ServicePlanTest, ANewJobIsKeptOffTheOtherReplicasNodesWhileOtherNodesServe) {
  ServiceRecord r = service(3);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[101] = running("n2");
  seen.jobs[102] = ended(1, 1000, "n3");
  pass(r, 1001 + kStableRunS);
  ServicePlan plan = pass(r, r.replicas[2].not_before);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].excluded_nodes, (std::vector<std::string>{"n1", "n2"}));
  // Only their nodes left in service: no spreading (the job may share a node).
  seen.usable_nodes = seen.free_nodes = {"n1", "n2"};
  seen.jobs[103] = ended(1, 1000, "n3");
  pass(r, r.replicas[2].not_before + 100);
  plan = pass(r, r.replicas[2].not_before);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_TRUE(plan.starts[0].excluded_nodes.empty());
}

TEST_F(ServicePlanTest, AJobKeptOffItsSiblingsNodesThatWaitsAMinuteGoesAgainAnywhere) {
  ServiceRecord r = service(2);
  start_all(r, 1000);  // 100 on n1, 101 on n2
  seen.jobs[101] = ended(1, 900, "n2");
  pass(r, 1001);
  ServicePlan plan = pass(r, r.replicas[1].not_before);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_TRUE(plan.starts[0].spread);
  std::uint32_t waiting = r.replicas[1].job_id;
  seen.jobs[waiting] = pending("Resources");  // the other nodes are full
  std::time_t t = r.replicas[1].started_at;
  EXPECT_TRUE(pass(r, t + kSpreadWaitS - 1).cancels.empty());
  plan = pass(r, t + kSpreadWaitS);
  EXPECT_EQ(plan.cancels, std::vector<std::uint32_t>{waiting});
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_FALSE(plan.starts[0].spread);
  EXPECT_TRUE(plan.starts[0].excluded_nodes.empty());
  // Waiting for the quota is not waiting for a node: it is left alone.
  ServiceRecord q = service(2);
  seen.jobs.clear();
  start_all(q, 2000);
  seen.jobs[next_id - 1] = pending("Licenses");
  EXPECT_TRUE(pass(q, 2000 + 10 * kSpreadWaitS).cancels.empty());
}

TEST_F(ServicePlanTest, NoSpreadingOntoNodesThatAreBusy) {
  ServiceRecord r = service(2);
  seen.free_nodes = {"n2"};
  start_all(r, 1000);  // 100 on n1; n2 idle
  seen.free_nodes = {};  // n2 taken meanwhile by another job
  seen.jobs[101] = ended(1, 900, "n2");
  pass(r, 1001);
  ServicePlan plan = pass(r, r.replicas[1].not_before);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_FALSE(plan.starts[0].spread) << "it would wait for a busy node while n1 has room";
}

TEST_F(ServicePlanTest, OnAnUnhealthyNodeTheReplacementIsTriedEveryTenSecondsOnAnyNodeOnceRefused) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  seen.jobs[100] = running("n4");
  seen.jobs[100].node_unhealthy = true;
  seen.usable_nodes = {"n1"};
  seen.now = 1001;
  int budget = 10;
  ServicePlan plan = plan_service(r, seen, budget);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].excluded_nodes, std::vector<std::string>{"n4"});
  record_start_failed(r, plan.starts[0], "Requested node configuration is not available", 1001);
  for (std::time_t t = 1002; t < 1011; ++t) EXPECT_TRUE(pass(r, t).starts.empty()) << t;
  plan = pass(r, 1011);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_TRUE(plan.starts[0].excluded_nodes.empty()) << "refused once: any node";
  int unhealthy = 0, refused = 0;
  for (const auto& e : r.events) {
    unhealthy += e.type == "NodeUnhealthy";
    refused += e.type == "StartFailed";
  }
  EXPECT_EQ(unhealthy, 1);
  EXPECT_EQ(refused, 1);
}

TEST_F(ServicePlanTest, AFailingLivenessProbeRestartsTheReplica) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[100].liveness_failures = kLivenessFailures - 1;
  EXPECT_TRUE(pass(r, 1001).cancels.empty());
  seen.jobs[100].liveness_failures = kLivenessFailures;
  ServicePlan plan = pass(r, 1002);
  EXPECT_EQ(plan.cancels, std::vector<std::uint32_t>{100});
  EXPECT_EQ(r.replicas[0].failures, 1);
  EXPECT_NE(r.replicas[0].last_failure.find("liveness"), std::string::npos);
  plan = pass(r, r.replicas[0].not_before);
  EXPECT_EQ(plan.starts.size(), 1u);
}

TEST_F(ServicePlanTest, AReplacementUnderWayTakesOverFromAJobFailingItsLivenessProbe) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[100].node_unhealthy = true;
  pass(r, 1001);  // replacement 101
  seen.jobs[101] = running("n2", false);
  seen.jobs[100].liveness_failures = kLivenessFailures;
  ServicePlan plan = pass(r, 1002);
  EXPECT_EQ(plan.cancels, std::vector<std::uint32_t>{100});
  EXPECT_EQ(r.replicas[0].job_id, 101u);
  EXPECT_EQ(r.replicas[0].replacement_job, 0u);
  EXPECT_TRUE(pass(r, 1003).cancels.empty()) << "the replacement is the replica's job, not an orphan";
}

TEST_F(ServicePlanTest, ScalesUpAtOnceAndDownOnlyAfterTheCooldown) {
  ServiceRecord r = service(1, 1, 4);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[100].metric = 35;  // 35 / 10 per replica: 4
  ServicePlan plan = start_all(r, 1001);
  EXPECT_EQ(r.desired, 4);
  EXPECT_EQ(plan.starts.size(), 3u);
  for (std::uint32_t id = 101; id <= 103; ++id) {
    seen.jobs[id] = running("n" + std::to_string(id - 99));
    seen.jobs[id].metric = 0;
  }
  seen.jobs[100].metric = 12;  // 12 over four: 2 would do
  pass(r, 1002);
  pass(r, 1020);
  EXPECT_EQ(r.desired, 4) << "down before the cooldown";
  plan = pass(r, 1002 + 30);
  EXPECT_EQ(r.desired, 2);
  EXPECT_EQ(plan.cancels, (std::vector<std::uint32_t>{103, 102})) << "the highest replicas go";
  EXPECT_EQ(r.replicas.size(), 2u);
  // Never below the minimum, never above the maximum.
  seen.jobs[100].metric = 0;
  seen.jobs[101].metric = 0;
  pass(r, 1100);
  pass(r, 1200);
  EXPECT_EQ(r.desired, 1);
  seen.jobs[100].metric = 1e9;
  pass(r, 1300);
  EXPECT_EQ(r.desired, 4);
}

TEST_F(ServicePlanTest, ScalesDownOnlyOnEveryReadyReplicasFigureAndToTheMostWantedInTheCooldown) {
  ServiceRecord r = service(3, 1, 4);
  start_all(r, 1000);
  for (std::uint32_t id = 100; id <= 102; ++id) {
    seen.jobs[id] = running("n" + std::to_string(id - 99));
    seen.jobs[id].metric = 0;
  }
  seen.jobs[101].metric.reset();  // overloaded: its /metrics did not answer in time
  pass(r, 1001);
  pass(r, 1100);
  EXPECT_EQ(r.desired, 3) << "down on a partial figure";
  seen.jobs[101].metric = 0;
  pass(r, 1101);           // 1 wanted from here
  seen.jobs[100].metric = 15;
  pass(r, 1110);           // 2 wanted for a moment
  seen.jobs[100].metric = 0;
  pass(r, 1101 + 30);
  EXPECT_EQ(r.desired, 2) << "the most wanted during the cooldown";
}

TEST_F(ServicePlanTest, AReplacementThatFailsBacksOffLikeTheReplica) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[100].node_unhealthy = true;
  pass(r, 1001);  // replacement 101
  std::time_t t = 1002;
  std::vector<int> waits;
  for (int i = 0; i < 3; ++i) {
    seen.jobs[r.replicas[0].replacement_job] = ended(1, t - 1, "n2");
    ServicePlan plan = pass(r, t);
    EXPECT_TRUE(plan.starts.empty()) << "a second replacement at once";
    waits.push_back(static_cast<int>(r.replicas[0].not_before - t));
    t = r.replicas[0].not_before;
    plan = pass(r, t);
    ASSERT_EQ(plan.starts.size(), 1u);
    EXPECT_TRUE(plan.starts[0].replacement);
  }
  // Counted apart: the old job, ready all along, does not clear them.
  EXPECT_EQ(waits, (std::vector<int>{kFirstReplacementBackoffS, 2 * kFirstReplacementBackoffS, 4 * kFirstReplacementBackoffS}));
  EXPECT_EQ(r.replicas[0].failures, 0) << "the replica itself did not fail";
}

TEST_F(ServicePlanTest, AReplicaLostWithItsNodeSoonAfterItsStartBacksOff) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  ReplicaJobObservation lost = ended(0, 1000, "n2");
  lost.node_fault = true;
  seen.jobs[100] = lost;
  ServicePlan plan = pass(r, 1010);
  EXPECT_TRUE(plan.starts.empty()) << "it may have taken the node down: no restart at once";
  EXPECT_EQ(r.replicas[0].failures, 1);
  EXPECT_EQ(r.replicas[0].avoid_nodes, std::vector<std::string>{"n2"});
}

TEST_F(ServicePlanTest, AJobNearItsTimeLimitIsReplacedAheadOfIt) {
  ServiceRecord r = service(1);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[100].ends_soon = true;
  ServicePlan plan = pass(r, 1001);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_TRUE(plan.starts[0].replacement);
  EXPECT_EQ(event_types(r).back(), "ReplicaStarted");
  EXPECT_EQ(r.events[r.events.size() - 2].type, "TimeLimitNear");
}

TEST_F(ServicePlanTest, ARefusedStartIsTriedAgainLessAndLessOften) {
  ServiceRecord r = service(1);
  std::time_t t = 1000;
  std::vector<int> waits;
  for (int i = 0; i < 6; ++i) {
    seen.now = t;
    int budget = 10;
    ServicePlan plan = plan_service(r, seen, budget);
    ASSERT_EQ(plan.starts.size(), 1u) << i;
    record_start_failed(r, plan.starts[0], "Job violates accounting/QOS policy", t);
    waits.push_back(static_cast<int>(r.replicas[0].not_before - t));
    t = r.replicas[0].not_before;
  }
  EXPECT_EQ(waits, (std::vector<int>{10, 20, 40, 80, 160, 300}));
}

TEST_F(ServicePlanTest, WithoutAnyReplicaReportingTheMetricTheCountStays) {
  ServiceRecord r = service(2, 1, 4);
  start_all(r, 1000);
  seen.jobs[100] = running("n1", false);
  seen.jobs[100].metric = 1000;  // not ready: not counted
  pass(r, 1001);
  pass(r, 2000);
  EXPECT_EQ(r.desired, 2);
}

TEST_F(ServicePlanTest, AJobWithTheServicesMarkIsAdoptedByAReplicaWithoutOneElseCancelled) {
  ServiceRecord r = service(2);
  for (std::uint32_t id : {50, 51, 52}) {
    seen.jobs[id] = running("n" + std::to_string(id - 49));
    seen.jobs[id].port = 8003;
  }
  seen.unclaimed = {{50, 0}, {51, 0}, {52, 7}};
  ServicePlan plan = pass(r, 1000);
  EXPECT_EQ(r.replicas[0].job_id, 50u);
  EXPECT_EQ(r.replicas[0].port, 8003) << "the port its mark names";
  EXPECT_EQ(plan.cancels, (std::vector<std::uint32_t>{51, 52}));
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].index, 1);
  EXPECT_EQ(plan.starts[0].port, 8000) << "not the adopted job's port";

  // The record names replica 1's job 100, which ended while the bridge was down; job 60 took its
  // place: adopted, no failure counted, nothing started.
  seen.unclaimed.clear();
  seen.jobs[100] = ended(1, 900);
  seen.jobs[60] = running("n4");
  seen.jobs[60].port = 8004;
  seen.unclaimed = {{60, 1}};
  plan = pass(r, 1001);
  EXPECT_EQ(r.replicas[1].job_id, 60u);
  EXPECT_EQ(r.replicas[1].failures, 0);
  EXPECT_TRUE(plan.starts.empty());
  EXPECT_TRUE(plan.cancels.empty());
}

TEST_F(ServicePlanTest, StartsGoOneAtATimeWhileTheyCanSpreadAndAtMostTenSecondsApart) {
  ServiceRecord r = service(3);
  EXPECT_EQ(pass(r, 1000).starts.size(), 1u);
  EXPECT_TRUE(pass(r, 1001).starts.empty()) << "job 100 has no node yet";
  EXPECT_EQ(pass(r, 1000 + kPlacementWaitS).starts.size(), 1u) << "waited long enough";
  EXPECT_TRUE(pass(r, 1000 + kPlacementWaitS + 1).starts.empty()) << "job 101 has no node yet";
  seen.jobs[101] = running("n2", false);  // job 100 waits on (Slurm's queue, say): not waited for any longer
  ServicePlan plan = pass(r, 1000 + kPlacementWaitS + 2);
  ASSERT_EQ(plan.starts.size(), 1u);
  EXPECT_EQ(plan.starts[0].excluded_nodes, (std::vector<std::string>{"n2"}));
}

TEST_F(ServicePlanTest, StartsWaitForTheRateLimit) {
  ServiceRecord r = service(5);
  int budget = 2;
  seen.now = 1000;
  seen.usable_nodes.clear();  // nowhere to spread: they all start at once
  ServicePlan plan = plan_service(r, seen, budget);
  EXPECT_EQ(plan.starts.size(), 2u);
  EXPECT_EQ(budget, 0);
}

TEST_F(ServicePlanTest, StopCancelsEveryJobAndStartsNothingAgain) {
  ServiceRecord r = service(2);
  start_all(r, 1000);
  ServicePlan plan = stop_service(r, seen, 1001);
  EXPECT_EQ(plan.cancels, (std::vector<std::uint32_t>{100, 101}));
  EXPECT_TRUE(pass(r, 1002).starts.empty());
  // A job that was being submitted as it stopped is cancelled when it shows up.
  seen.jobs[77] = running("n1");
  seen.unclaimed = {{77, 0}};
  EXPECT_EQ(pass(r, 1003).cancels, std::vector<std::uint32_t>{77});
  EXPECT_EQ(service_phase(r, seen), WorkloadPhase::stopped);
  // A cancel Slurm did not take is made again.
  seen.jobs[77].live = true;
  EXPECT_EQ(pass(r, 1004).cancels, std::vector<std::uint32_t>{77});
}

TEST_F(ServicePlanTest, TheRecordReadsBackAsItWasWritten) {
  ServiceRecord r = service(2, 1, 4);
  r.user = "alice";
  r.work_dir = "/home/alice/safe-bridge";
  start_all(r, 1000);
  seen.jobs[100] = ended(1, 990);
  pass(r, 1001);
  r.replicas[1].avoid_nodes = {"n3"};
  r.replicas[1].replacement_job = 7;
  auto back = parse_service_record(service_record_json(r));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, r);
  EXPECT_FALSE(parse_service_record("{\"version\":2}"));
  EXPECT_FALSE(parse_service_record("not json"));
}

TEST_F(ServicePlanTest, TheViewAndEndpointsShowEachReplica) {
  ServiceRecord r = service(2);
  start_all(r, 1000);
  seen.jobs[100] = running("n1");
  seen.jobs[101] = pending("Licenses");
  pass(r, 1001);
  EXPECT_EQ(service_phase(r, seen), WorkloadPhase::running);
  std::string endpoints = json_text(render_endpoints(r, seen).get());
  EXPECT_EQ(endpoints, R"({"service":"web","endpoints":[{"host":"10.0.0.1","port":8000,"ready":true,"replica":0}]})");
  std::string view = json_text(render_service(r, seen).get());
  EXPECT_NE(view.find(R"("desired":2,"ready":1)"), std::string::npos) << view;
  EXPECT_NE(view.find(R"("state":"Pending","ready":false,"jobId":101,"node":null,"port":8001,"reason":"Licenses")"), std::string::npos)
      << view;
}

TEST(MetricTotal, SumsEverySampleOfTheMetricAndNothingElse) {
  const char* text =
      "# HELP queue Requests waiting.\n# TYPE queue gauge\nqueue{model=\"a}b\"} 3\nqueue{model=\"c\"} 4.5\n"
      "queue_total 100\nqueue 1 1700000000\nother 7\nqueue NaN\nqueue{broken 5\n";
  EXPECT_EQ(metric_total(text, "queue"), 8.5);
  EXPECT_EQ(metric_total(text, "queue_total"), 100);
  EXPECT_FALSE(metric_total(text, "absent"));
  EXPECT_FALSE(metric_total("", "queue"));
}

TEST(WantedReplicas, RoundsUpWithinTheBounds) {
  ScalingRule rule{"q", 10, 30};
  EXPECT_EQ(wanted_replicas(rule, 0, 1, 5), 1);
  EXPECT_EQ(wanted_replicas(rule, 10, 1, 5), 1);
  EXPECT_EQ(wanted_replicas(rule, 10.5, 1, 5), 2);
  EXPECT_EQ(wanted_replicas(rule, 1e300, 1, 5), 5);
}

}  // namespace
}  // namespace safe::bridge
