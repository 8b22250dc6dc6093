// The failover planner's pure decisions as tables: what a job's state shows about its attempts,
// what each phase of a failover does next, and where a requeued job may run. The stories in
// failover_planner_test.cpp check the executor that performs these steps.
#include "controller/safed/failover_decisions.hpp"

#include <gtest/gtest.h>

namespace safe {
namespace {

using Kind = FailoverStep::Kind;

SlurmJob job_in(SlurmJobState state, int restart_count, bool completing = false) {
  SlurmJob j;
  j.id = 7;
  j.state = state;
  j.restart_count = restart_count;
  j.completing = completing;
  return j;
}

// ---- which attempt has something to classify

struct EventCase {
  const char* name;
  SlurmJobState state;
  bool completing;
  int restart_count;
  int classified;
  AttemptEvent event;
};

class AttemptEventTest : public ::testing::TestWithParam<EventCase> {};

TEST_P(AttemptEventTest, Decides) {
  const EventCase& c = GetParam();
  EXPECT_EQ(c.event, attempt_event(job_in(c.state, c.restart_count, c.completing), c.classified)) << c.name;
}

const EventCase kEventCases[] = {
    {"first_run_running", SlurmJobState::running, false, 0, -1, AttemptEvent::running},
    {"running_run_already_classified", SlurmJobState::running, false, 1, 1, AttemptEvent::none},
    {"old_run_still_running_after_requeue", SlurmJobState::running, true, 1, 0, AttemptEvent::none},
    {"pending_first_run", SlurmJobState::pending, false, 0, -1, AttemptEvent::none},
    {"pending_after_unseen_requeue", SlurmJobState::pending, false, 1, -1, AttemptEvent::previous_ended},
    {"pending_after_classified_requeue", SlurmJobState::pending, false, 1, 0, AttemptEvent::none},
    {"failed_and_wound_down", SlurmJobState::failed, false, 0, -1, AttemptEvent::ended},
    {"failed_still_completing", SlurmJobState::failed, true, 0, -1, AttemptEvent::none},
    {"completed", SlurmJobState::complete, false, 2, 1, AttemptEvent::ended},
    {"ended_and_classified", SlurmJobState::node_fail, false, 2, 2, AttemptEvent::none},
    {"suspended", SlurmJobState::suspended, false, 0, -1, AttemptEvent::none},
};
INSTANTIATE_TEST_SUITE_P(Table, AttemptEventTest, ::testing::ValuesIn(kEventCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- what a pass does about a node

struct NodeCase {
  const char* name;
  bool drain, down;
  const char* reason;
  bool quarantined, in_fault;
  bool restore, end, record, in_fault_after;
};

class NodeStepTest : public ::testing::TestWithParam<NodeCase> {};

TEST_P(NodeStepTest, Decides) {
  const NodeCase& c = GetParam();
  SlurmNode n;
  n.name = "n1";
  n.drain = c.drain;
  n.down = n.state_down = c.down;
  n.reason = c.reason;
  NodeStep s = decide_node(n, c.quarantined, c.in_fault);
  EXPECT_EQ(c.restore, s.restore_quarantine) << c.name;
  EXPECT_EQ(c.end, s.end_quarantine) << c.name;
  EXPECT_EQ(c.record, s.record_fault) << c.name;
  EXPECT_EQ(c.in_fault_after, s.in_fault) << c.name;
}

const NodeCase kNodeCases[] = {
    {"healthy", false, false, "", false, false, false, false, false, false},
    {"safe_drain_starts_an_episode", true, false, "SaFE: gpu0 ECC", false, false, false, false, true, true},
    {"same_episode_once", true, false, "SaFE: gpu0 ECC again", false, true, false, false, false, true},
    {"not_responding_then_down_is_one_episode", false, true, "Not responding", false, true, false, false, false, true},
    {"down_starts_an_episode", false, true, "", false, false, false, false, true, true},
    {"admin_drain_is_no_fault", true, false, "replacing a fan", false, false, false, false, false, false},
    {"healthy_again_ends_the_episode", false, false, "", false, true, false, false, false, false},
    {"quarantine_holds_the_episode", true, false, "SaFE-quarantine: lemon", true, true, false, false, false, true},
    {"quarantine_reason_replaced", true, false, "SaFE: gpu1 hot", true, true, true, false, false, true},
    {"quarantined_node_down", false, true, "Not responding", true, true, true, false, false, true},
    {"quarantined_node_resumed_outside", false, false, "", true, true, false, true, false, false},
};
INSTANTIATE_TEST_SUITE_P(Table, NodeStepTest, ::testing::ValuesIn(kNodeCases),
                         [](const auto& info) { return std::string(info.param.name); });

// Slurm flags a node it has just resumed (scontrol update state=resume) not responding until its
// next ping: that is no fault, or every resume by an admin would count towards a quarantine.
TEST(NodeStep, NotRespondingAloneIsNoFault) {
  SlurmNode n;
  n.name = "n1";
  n.down = n.not_responding = true;
  NodeStep s = decide_node(n, false, false);
  EXPECT_FALSE(s.record_fault);
  EXPECT_FALSE(s.in_fault);
  n.state_down = true;  // then Slurm or safed's probe sets it DOWN: that is the fault
  s = decide_node(n, false, false);
  EXPECT_TRUE(s.record_fault);
}

// ---- after a classified failure

TEST(FailoverDecisions, AfterAFailure) {
  using A = AfterFailure;
  // by_slurm, refused, retried, used, max
  EXPECT_EQ(A::fail_over, decide_after_failure(false, false, false, true, 0, 3));
  EXPECT_EQ(A::fail_over, decide_after_failure(true, false, false, true, 2, 3)) << "Slurm requeued it after a node fault";
  EXPECT_EQ(A::retries_exhausted, decide_after_failure(false, false, false, true, 3, 3));
  EXPECT_EQ(A::retries_exhausted, decide_after_failure(true, false, false, true, 3, 3));
  EXPECT_EQ(A::fail_over, decide_after_failure(true, true, false, true, 3, 3)) << "a run the prolog refused costs no retry";
  EXPECT_EQ(A::not_retried, decide_after_failure(false, false, false, false, 0, 3)) << "a user error";
  EXPECT_EQ(A::leave_to_owner, decide_after_failure(true, false, false, false, 0, 3)) << "requeued by an administrator";
  EXPECT_EQ(A::retries_exhausted, decide_after_failure(false, false, false, true, 0, 0)) << "no retries: never failed over";
  // Slurm's expedited requeue (25.11): the job's owner asked Slurm to restart it; SaFE neither
  // requeues it again nor holds it, whatever its class and retries.
  EXPECT_EQ(A::leave_to_owner, decide_after_failure(true, false, true, true, 0, 0));
  EXPECT_EQ(A::leave_to_owner, decide_after_failure(true, false, true, false, 0, 3)) << "a class SaFE does not retry";
  EXPECT_EQ(A::fail_over, decide_after_failure(false, false, true, true, 0, 3)) << "a fault SaFE found first";
  EXPECT_EQ(A::leave_to_owner, decide_after_failure(true, true, true, true, 0, 3))
      << "a run the prolog refused: Slurm holds or restarts it";
}

// ---- waiting: backoff, then the checkpoint signal

TEST(FailoverDecisions, WaitingHoldsUntilTheBackoffIsOverThenSignalsARunningJob) {
  FailoverRecord f;
  f.not_before = 100;
  SlurmJob running = job_in(SlurmJobState::running, 0);
  FailoverStep s = decide_waiting(f, running, 10, 99);
  EXPECT_EQ(Kind::wait, s.kind);
  EXPECT_EQ(Deferral::backoff, s.deferral);
  s = decide_waiting(f, running, 10, 100);
  EXPECT_EQ(Kind::begin, s.kind);
  EXPECT_EQ(10, s.signal);
  EXPECT_EQ(0, decide_waiting(f, running, 0, 100).signal) << "no --safe-ckpt-signal: nothing to send";
  EXPECT_EQ(0, decide_waiting(f, job_in(SlurmJobState::running, 0, true), 10, 100).signal) << "winding down";
  EXPECT_EQ(0, decide_waiting(f, job_in(SlurmJobState::pending, 1), 10, 100).signal) << "not running";
  EXPECT_EQ(Kind::begin, decide_waiting(f, job_in(SlurmJobState::failed, 0), 10, 100).kind);
  EXPECT_EQ(Kind::ended, decide_waiting(f, job_in(SlurmJobState::cancelled, 0), 10, 100).kind) << "scancel";
  EXPECT_EQ(Kind::ended, decide_waiting(f, job_in(SlurmJobState::cancelled, 0, true), 10, 99).kind)
      << "scancel, winding down, in the backoff";
}

// ---- signalled: the grace

struct GraceCase {
  const char* name;
  SlurmJobState state;
  bool completing;
  bool checkpointed;
  long long now;  // signal at 100, grace 30
  Kind kind;
  const char* why;
};

class GraceTest : public ::testing::TestWithParam<GraceCase> {};

TEST_P(GraceTest, Decides) {
  const GraceCase& c = GetParam();
  FailoverRecord f;
  f.signal_time = 100;
  FailoverStep s = decide_signalled(f, job_in(c.state, 0, c.completing), 30, c.checkpointed, c.now);
  EXPECT_EQ(c.kind, s.kind) << c.name;
  EXPECT_EQ(c.why, s.why) << c.name;
}

const GraceCase kGraceCases[] = {
    {"running_within_grace", SlurmJobState::running, false, false, 129, Kind::wait, ""},
    {"new_checkpoint", SlurmJobState::running, false, true, 101, Kind::stop_waiting, "new checkpoint complete"},
    {"job_stopped", SlurmJobState::failed, false, false, 101, Kind::stop_waiting, "job stopped"},
    {"job_winding_down", SlurmJobState::running, true, false, 101, Kind::stop_waiting, "job stopped"},
    {"grace_over", SlurmJobState::running, false, false, 130, Kind::stop_waiting, "grace of 30 s over"},
    {"cancelled_in_grace", SlurmJobState::cancelled, true, false, 101, Kind::ended, ""},
    {"cancelled_after_checkpoint", SlurmJobState::cancelled, false, true, 101, Kind::ended, ""},
};
INSTANTIATE_TEST_SUITE_P(Table, GraceTest, ::testing::ValuesIn(kGraceCases),
                         [](const auto& info) { return std::string(info.param.name); });

// ---- requeueing: nodes that do not answer

struct SilentCase {
  const char* name;
  SlurmJobState state;
  bool completing;
  RunNode node;  // the run's second node (the first, n1, is healthy)
  bool hold;
  bool listed;    // in the step's silent nodes
  bool set_down;  // safed sets it DOWN first
};

class SilentNodeTest : public ::testing::TestWithParam<SilentCase> {};

TEST_P(SilentNodeTest, Decides) {
  const SilentCase& c = GetParam();
  FailoverRecord f;
  f.attempt = 0;
  std::vector<RunNode> nodes{{"n1", false, false, false, ""}, c.node};
  FailoverStep s = decide_requeueing(f, job_in(c.state, 0, c.completing), nodes);
  EXPECT_EQ(Kind::requeue, s.kind) << c.name;
  EXPECT_EQ(c.hold, s.hold) << c.name;
  EXPECT_EQ(c.hold ? Deferral::silent_nodes : Deferral::none, s.deferral) << c.name;
  ASSERT_EQ(c.listed ? 1u : 0u, s.silent.size()) << c.name;
  if (!c.listed) return;
  EXPECT_EQ("n2", s.silent[0].name);
  EXPECT_EQ(c.set_down, s.silent[0].set_down) << c.name;
  if (c.set_down)
    EXPECT_EQ("SaFE-unreachable: slurmd did not answer safed's probe when job 7 failed over", s.silent[0].reason);
  else
    EXPECT_EQ(c.node.reason, s.silent[0].reason);
}

const SilentCase kSilentCases[] = {
    {"all_answer", SlurmJobState::running, false, {"n2", false, false, false, ""}, false, false, false},
    {"slurm_down_while_held", SlurmJobState::running, false, {"n2", true, true, false, "Not responding"}, true, true, false},
    {"slurm_down_after_release", SlurmJobState::node_fail, false, {"n2", true, true, false, "Not responding"}, false, true, false},
    {"slurm_down_while_winding_down", SlurmJobState::node_fail, true, {"n2", true, true, false, "x"}, true, true, false},
    {"one_missed_ping_waits", SlurmJobState::running, false, {"n2", true, false, false, ""}, true, false, false},
    {"probes_silent_while_held", SlurmJobState::running, false, {"n2", false, false, true, ""}, true, true, true},
    {"probes_silent_after_release", SlurmJobState::failed, false, {"n2", false, false, true, ""}, false, false, false},
};
INSTANTIATE_TEST_SUITE_P(Table, SilentNodeTest, ::testing::ValuesIn(kSilentCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(FailoverDecisions, ACancelledJobIsNotRequeued) {
  FailoverRecord f;
  f.attempt = 0;
  std::vector<RunNode> nodes{{"n1", false, false, false, ""}};
  EXPECT_EQ(Kind::ended, decide_requeueing(f, job_in(SlurmJobState::cancelled, 0), nodes).kind);
  EXPECT_EQ(Kind::ended, decide_requeueing(f, job_in(SlurmJobState::cancelled, 0, true), nodes).kind);
  EXPECT_EQ(Kind::requeue, decide_requeueing(f, job_in(SlurmJobState::node_fail, 0), nodes).kind);
}

TEST(FailoverDecisions, ARequeueSlurmAlreadyMadeIsTakenAsDone) {
  FailoverRecord f;
  f.attempt = 0;
  std::vector<RunNode> silent{{"n2", false, false, true, ""}};
  FailoverStep s = decide_requeueing(f, job_in(SlurmJobState::pending, 1), silent);
  EXPECT_EQ(Kind::requeued_by_slurm, s.kind);
  EXPECT_TRUE(s.silent.empty());
}

// ---- requeued: the restart

TEST(FailoverDecisions, TheRestartWaitsForSlurmThenStartsAtOnceOrAfterTheRevocationsSecond) {
  FailoverRecord f;
  f.attempt = 0;
  f.not_before = 0;
  f.requeue_time = 200;
  RestartPlacement elsewhere{"n1", std::nullopt, {}, false, {}, std::nullopt};
  EXPECT_EQ(Kind::wait, decide_requeued(f, job_in(SlurmJobState::pending, 0, true), elsewhere, 210).kind)
      << "requeue not yet counted";
  EXPECT_EQ(Kind::requeue_lost, decide_requeued(f, job_in(SlurmJobState::running, 0), elsewhere, 210).kind)
      << "the run goes on uncounted: slurmctld lost the requeue";
  EXPECT_EQ(Kind::requeue_lost, decide_requeued(f, job_in(SlurmJobState::failed, 0), elsewhere, 210).kind)
      << "the run ended as before, uncounted";
  EXPECT_EQ(Kind::ended, decide_requeued(f, job_in(SlurmJobState::cancelled, 0), elsewhere, 210).kind)
      << "cancelled meanwhile";
  EXPECT_EQ(Kind::wait, decide_requeued(f, job_in(SlurmJobState::pending, 1, true), elsewhere, 210).kind)
      << "old run winding down";
  EXPECT_EQ(Kind::ended, decide_requeued(f, job_in(SlurmJobState::cancelled, 1), elsewhere, 210).kind);
  FailoverStep already = decide_requeued(f, job_in(SlurmJobState::running, 1), elsewhere, 210);
  EXPECT_EQ(Kind::restart, already.kind) << "Slurm started it again itself (requeue_delay)";
  EXPECT_TRUE(already.running_again);
  FailoverStep s = decide_requeued(f, job_in(SlurmJobState::pending, 1), elsewhere, 210);
  EXPECT_EQ(Kind::restart, s.kind);
  EXPECT_EQ(210, s.start);
  EXPECT_EQ(elsewhere, s.placement);
  RestartPlacement same_nodes{"", std::nullopt, {}, true, {}, std::nullopt};
  f.requeue_time = 209;
  EXPECT_EQ(Kind::wait, decide_requeued(f, job_in(SlurmJobState::pending, 1), same_nodes, 210).kind)
      << "on the nodes it just left: not in the second after the requeue's";
  FailoverStep back = decide_requeued(f, job_in(SlurmJobState::pending, 1), same_nodes, 211);
  EXPECT_EQ(Kind::restart, back.kind) << "kRevokeMargin_s after the requeue";
  EXPECT_EQ(211, back.start) << "at once: not a later StartTime, which Slurm acts on only at its next cycle";
  f.requeue_time = 200;
  f.not_before = 400;
  EXPECT_EQ(400, decide_requeued(f, job_in(SlurmJobState::pending, 1), elsewhere, 210).start) << "backoff";
}

// ---- where the restart may run

std::vector<SlurmNode> cluster(int n) {
  std::vector<SlurmNode> out;
  for (int i = 1; i <= n; ++i) {
    SlurmNode node;
    node.name = "n" + std::to_string(i);
    out.push_back(node);
  }
  return out;
}

TEST(RestartPlacement, KeepsTheJobOffBadNodesItsOwnExclusionsAndTheNodesItJustLeft) {
  RestartInputs in;
  in.user_exclude = "n6";
  in.bad = {"n2"};
  in.left = "n1,n2";
  in.num_nodes = 2;
  RestartPlacement p = place_restart(in, cluster(6));
  EXPECT_EQ("n6,n2,n1", p.exclude);
  EXPECT_FALSE(p.reuses_left);
  EXPECT_FALSE(p.required);
}

TEST(RestartPlacement, ReusesTheNodesItLeftWhenTheRestOfTheClusterCannotHoldIt) {
  RestartInputs in;
  in.bad = {"n2"};
  in.left = "n1,n2";
  in.num_nodes = 2;
  std::vector<SlurmNode> nodes = cluster(3);
  RestartPlacement p = place_restart(in, nodes);
  EXPECT_EQ("n2", p.exclude) << "only n3 is free elsewhere: n1 is reused after the revocation's second";
  EXPECT_TRUE(p.reuses_left);
  nodes.push_back(nodes[0]);
  nodes.back().name = "n4";
  nodes.back().drain = true;
  EXPECT_TRUE(place_restart(in, nodes).reuses_left) << "a drained node holds nothing";
  nodes.back().drain = false;
  nodes.back().busy = true;
  EXPECT_TRUE(place_restart(in, nodes).reuses_left)
      << "a node busy with another job holds nothing now: the revocation's second is the shorter wait";
  nodes.back().busy = false;
  EXPECT_FALSE(place_restart(in, nodes).reuses_left);
}

TEST(RestartPlacement, BadNodesTheJobNeedsAreLeftToSlurmsDrainsNotExcludedForGood) {
  // A 4-node job on 5 nodes: n2 failed earlier (repaired, back in service), n5 just now (drained).
  RestartInputs in;
  in.bad = {"n2", "n5"};
  in.left = "n1,n3,n4,n5";
  in.num_nodes = 4;
  std::vector<SlurmNode> nodes = cluster(5);
  nodes[4].drain = true;
  RestartPlacement p = place_restart(in, nodes);
  EXPECT_EQ("", p.exclude) << "excluding n2 would keep the job pending for good; Slurm keeps it off the drained n5";
  EXPECT_EQ((std::vector<std::string>{"n2", "n5"}), p.bad_not_excluded);
  EXPECT_TRUE(p.reuses_left) << "it needs the nodes it just left";
  // With a spare node the bad nodes are excluded as ever.
  nodes = cluster(7);
  nodes[4].drain = true;
  p = place_restart(in, nodes);
  EXPECT_EQ("n2,n5", p.exclude.substr(0, 5));
  EXPECT_TRUE(p.bad_not_excluded.empty());
}

TEST(RestartPlacement, AFailedRequiredNodeIsDroppedAndARecentOneWaitedFor) {
  RestartInputs in;
  in.bad = {"n2"};
  in.required = "n1,n2";
  in.left = "n1,n2";
  in.num_nodes = 2;
  RestartPlacement p = place_restart(in, cluster(6));
  ASSERT_TRUE(p.required);
  EXPECT_EQ("n1", *p.required);
  EXPECT_EQ(std::vector<std::string>{"n2"}, p.dropped_required);
  EXPECT_EQ("n2", p.exclude) << "the required n1 is never excluded";
  EXPECT_TRUE(p.reuses_left) << "the job needs n1 back, after the revocation's second";
}

TEST(FailoverDecisions, ANodeIsBlamedOnceAsANodeFault) {
  FailoverRecord f;
  f.failure_class = "infra_transient";
  f.evidence = "exit 137";
  f.bad_nodes = "n1";
  EXPECT_TRUE(blame_node(f, "n3", "Not responding"));
  EXPECT_EQ("n1,n3", f.bad_nodes);
  EXPECT_EQ("node_fault", f.failure_class);
  EXPECT_EQ("n3: Not responding; before: exit 137", f.evidence);
  EXPECT_FALSE(blame_node(f, "n3", "again"));
  EXPECT_EQ("n3: Not responding; before: exit 137", f.evidence);
  EXPECT_TRUE(blame_node(f, "n4", ""));
  EXPECT_EQ("n4: down; before: n3: Not responding; before: exit 137", f.evidence);
}

}  // namespace
}  // namespace safe
