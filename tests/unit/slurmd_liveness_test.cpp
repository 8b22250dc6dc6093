// Dead-node detection: the pure judgement (probe results -> DOWN / resume), the socket layer
// against real sockets on loopback, and the detector's calls to a fake Slurm.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include "controller/safed/dead_node_detector.hpp"
#include "controller/safed/slurmd_liveness.hpp"
#include "controller/safed/slurmd_prober.hpp"
#include "tests/unit/fake_slurm.hpp"
#include "tests/unit/loopback_listener.hpp"

namespace safe {
namespace {

using testing::FakeFiles;
using testing::FakeSlurm;
using Listener = testing::LoopbackListener;
using testing::ServingListener;

ProbeResult probe(ProbeOutcome o) { return {"n2", o, "10.0.0.2:6818"}; }

SlurmNode up_node() {
  SlurmNode n;
  n.name = "n2";
  n.addr = "10.0.0.2";
  n.port = 6818;
  return n;
}

SlurmNode downed_by_safe() {
  SlurmNode n = up_node();
  n.down = n.state_down = true;
  n.reason = "SaFE-unreachable: slurmd 10.0.0.2:6818 connection refused x3 over 2.0 s";
  return n;
}

TEST(SlurmdLiveness, ConsecutiveFailuresSetTheNodeDownOnce) {
  LivenessPolicy policy{3, 2};
  SlurmdLiveness s;
  SlurmNode n = up_node();
  s = after_probe(s, probe(ProbeOutcome::refused), 1000);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy));
  s = after_probe(s, probe(ProbeOutcome::timed_out), 2000);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy));
  s = after_probe(s, probe(ProbeOutcome::refused), 3000);
  EXPECT_EQ("SaFE-unreachable: slurmd 10.0.0.2:6818 connection refused x3 over 2.0 s", unreachable_reason(s, 3000));
  EXPECT_EQ(LivenessAction::set_down, judge_liveness(s, n, policy));
  // Slurm's view still shows it up until the next poll: no second DOWN for the same failures.
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy));
}

// Refused connections only: the host is up and slurmd is not running. slurmd restarting waits for
// the prologs and epilogs it runs before it exits, and running jobs survive the restart: the
// node gets the restart grace, said once, before it is set DOWN. A host that falls silent
// meanwhile is down at once.
TEST(SlurmdLiveness, RefusedOnlyIsARestartGivenItsGrace) {
  LivenessPolicy policy{3, 2, 60000};
  SlurmdLiveness s;
  SlurmNode n = up_node();
  s = after_probe(s, probe(ProbeOutcome::refused), 1000);
  s = after_probe(s, probe(ProbeOutcome::refused), 2000);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy));
  s = after_probe(s, probe(ProbeOutcome::refused), 3000);
  EXPECT_EQ(LivenessAction::restarting, judge_liveness(s, n, policy));
  EXPECT_TRUE(restarting(s, policy));
  for (long long ms = 4000; ms < 61000; ms += 1000) {
    s = after_probe(s, probe(ProbeOutcome::refused), ms);
    ASSERT_EQ(LivenessAction::none, judge_liveness(s, n, policy)) << "said once, at " << ms;
  }
  s = after_probe(s, probe(ProbeOutcome::refused), 61000);
  EXPECT_FALSE(restarting(s, policy));
  EXPECT_EQ("SaFE-unreachable: slurmd 10.0.0.2:6818 connection refused x61 over 60.0 s", unreachable_reason(s, 61000));
  EXPECT_EQ(LivenessAction::set_down, judge_liveness(s, n, policy));

  SlurmdLiveness starting;  // the new slurmd listens, but serves only after its startup health check
  for (long long ms : {1000, 2000, 3000}) starting = after_probe(starting, probe(ProbeOutcome::refused), ms);
  EXPECT_EQ(LivenessAction::restarting, judge_liveness(starting, n, policy));
  for (long long ms : {4000, 5000, 6000, 7000}) starting = after_probe(starting, probe(ProbeOutcome::silent), ms);
  EXPECT_EQ(LivenessAction::none, judge_liveness(starting, n, policy)) << "a slurmd starting up";
  starting = after_probe(starting, probe(ProbeOutcome::timed_out), 8000);
  EXPECT_FALSE(restarting(starting, policy));
  EXPECT_EQ(LivenessAction::set_down, judge_liveness(starting, n, policy)) << "the host itself stopped answering";

  SlurmdLiveness hung;  // slurmd stopped or hung from the start (a freeze): no restart
  for (long long ms : {1000, 2000}) hung = after_probe(hung, probe(ProbeOutcome::silent), ms);
  hung = after_probe(hung, probe(ProbeOutcome::refused), 3000);
  EXPECT_EQ(LivenessAction::set_down, judge_liveness(hung, n, policy));

  SlurmdLiveness back;
  for (long long ms : {1000, 2000, 3000}) back = after_probe(back, probe(ProbeOutcome::refused), ms);
  EXPECT_EQ(LivenessAction::restarting, judge_liveness(back, n, policy));
  back = after_probe(back, probe(ProbeOutcome::connected), 4000);
  for (long long ms : {5000, 6000, 7000}) back = after_probe(back, probe(ProbeOutcome::refused), ms);
  EXPECT_EQ(LivenessAction::restarting, judge_liveness(back, n, policy)) << "a new restart, said again";

  LivenessPolicy no_grace{3, 2, 0};
  SlurmdLiveness gone;
  for (long long ms : {1000, 2000, 3000}) gone = after_probe(gone, probe(ProbeOutcome::refused), ms);
  EXPECT_EQ(LivenessAction::set_down, judge_liveness(gone, n, no_grace)) << "restart_grace_s: 0";
}

TEST(SlurmdLiveness, AnAnsweredProbeStartsTheCountAgain) {
  LivenessPolicy policy{3, 2};
  SlurmdLiveness s;
  SlurmNode n = up_node();
  for (ProbeOutcome o : {ProbeOutcome::timed_out, ProbeOutcome::timed_out, ProbeOutcome::connected,
                         ProbeOutcome::timed_out, ProbeOutcome::timed_out}) {
    s = after_probe(s, probe(o), 0);
    EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy)) << "a busy slurmd that answers now and then";
  }
}

TEST(SlurmdLiveness, NodesSlurmAlreadyHasDownOrQuarantinedAreLeftToIt) {
  LivenessPolicy policy{1, 1};
  SlurmNode slurm_down = up_node();
  slurm_down.down = slurm_down.state_down = true;
  slurm_down.reason = "Not responding";
  SlurmdLiveness s = after_probe({}, probe(ProbeOutcome::refused), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, slurm_down, policy));
  EXPECT_EQ(0, s.failures) << "failures while Slurm has it DOWN do not count later";
  s = after_probe(s, probe(ProbeOutcome::connected), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, slurm_down, policy)) << "not SaFE's DOWN: not SaFE's to lift";

  SlurmNode quarantined = downed_by_safe();
  quarantined.drain = true;
  quarantined.reason = "SaFE-quarantine: 3 faults in 86400s";
  s = after_probe({}, probe(ProbeOutcome::connected), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, quarantined, policy));
  quarantined.state_down = quarantined.down = false;
  s = after_probe({}, probe(ProbeOutcome::refused), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, quarantined, policy));
}

TEST(SlurmdLiveness, ItsOwnDownIsLiftedOnceSlurmdAnswersAndSlurmHearsFromIt) {
  LivenessPolicy policy{3, 2};
  SlurmNode n = downed_by_safe();
  SlurmdLiveness s = after_probe({}, probe(ProbeOutcome::refused), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy));
  s = after_probe(s, probe(ProbeOutcome::connected), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy)) << "one answer is not enough";
  s = after_probe(s, probe(ProbeOutcome::connected), 0);
  n.not_responding = true;
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy)) << "slurmctld has not heard from it yet";
  n.not_responding = false;
  EXPECT_EQ(LivenessAction::resume, judge_liveness(s, n, policy));
  // Slurm let it register (ReturnToService=2): IDLE, but safed's DRAIN kept it out of service,
  // and lifting it is still safed's.
  SlurmNode registered = n;
  registered.down = registered.state_down = false;
  registered.drain = true;
  EXPECT_TRUE(out_of_service_by_safe(registered));
  EXPECT_EQ(LivenessAction::resume, judge_liveness(s, registered, policy));
  SlurmdLiveness failing = after_probe({}, probe(ProbeOutcome::refused), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(failing, registered, LivenessPolicy{1, 1}))
      << "out of service already: not set DOWN again";
  // Slurm returned it itself (ReturnToService=2) right after a failed probe: not downed again.
  SlurmNode back = up_node();
  s = after_probe({}, probe(ProbeOutcome::refused), 0);
  s = after_probe(s, probe(ProbeOutcome::refused), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, n, policy));
  s = after_probe(s, probe(ProbeOutcome::refused), 0);
  EXPECT_EQ(LivenessAction::none, judge_liveness(s, back, policy));
}

TEST(SlurmdLiveness, TargetsAreBusyNodesInServiceAndItsOwnDownNodes) {
  SlurmNode busy = up_node();
  SlurmNode idle = up_node();
  idle.name = "n3";
  SlurmNode ours = downed_by_safe();
  ours.name = "n4";
  SlurmNode slurm_down = up_node();
  slurm_down.name = "n5";
  slurm_down.state_down = true;
  slurm_down.reason = "Not responding";
  SlurmNode no_addr = up_node();
  no_addr.name = "n6";
  no_addr.addr.clear();
  SlurmNode default_port = up_node();
  default_port.name = "n7";
  default_port.port = 0;
  SlurmNode ours_registered = downed_by_safe();
  ours_registered.name = "n8";
  ours_registered.down = ours_registered.state_down = false;
  ours_registered.drain = true;
  auto t = probe_targets({busy, idle, ours, slurm_down, no_addr, default_port, ours_registered},
                         {"n2", "n5", "n6", "n7"});
  ASSERT_EQ(4u, t.size());
  EXPECT_EQ("n2", t[0].node);
  EXPECT_EQ("n4", t[1].node);
  EXPECT_EQ("n7", t[2].node);
  EXPECT_EQ(6818, t[2].port);
  EXPECT_EQ("n8", t[3].node);
  // A node Slurm lost, whose fault waits for the probe's verdict (FailoverPlanner::nodes_awaiting_probe).
  t = probe_targets({busy, slurm_down, no_addr}, {}, {"n5", "n6"});
  ASSERT_EQ(1u, t.size());
  EXPECT_EQ("n5", t[0].node);
}

TEST(SlurmdProber, RealSocketsConnectedRefusedAndUnresolvable) {
  ServingListener alive(16);
  int dead_port = 0;
  {
    Listener gone(16);
    dead_port = gone.port;
  }  // closed: nothing listens there any more
  auto r = probe_slurmds({{"a", "127.0.0.1", alive.port()},
                          {"b", "127.0.0.1", dead_port},
                          {"c", "no-such-host.invalid", 6818},
                          {"d", "localhost", alive.port()}},
                         500, 2);
  ASSERT_EQ(4u, r.size());
  EXPECT_EQ(ProbeOutcome::connected, r[0].outcome);
  EXPECT_EQ("127.0.0.1:" + std::to_string(alive.port()), r[0].address);
  EXPECT_EQ(ProbeOutcome::refused, r[1].outcome);
  EXPECT_EQ(ProbeOutcome::failed, r[2].outcome);
  EXPECT_EQ(ProbeOutcome::connected, r[3].outcome);
  EXPECT_EQ("d", r[3].node);
}

// A stopped slurmd (SIGSTOP, or hung): its socket still listens and the kernel completes the
// handshake, but nobody accepts, reads or closes. A probe that stopped at the handshake took it
// for alive.
TEST(SlurmdProber, AListenerNobodyServesIsSilent) {
  Listener stopped(16);
  ServingListener alive(16);
  auto r = probe_slurmds({{"stopped", "127.0.0.1", stopped.port}, {"alive", "127.0.0.1", alive.port()}}, 300, 2);
  EXPECT_EQ(ProbeOutcome::silent, r[0].outcome);
  EXPECT_EQ(ProbeOutcome::connected, r[1].outcome);
  EXPECT_EQ("accepted, no reply", to_string(r[0].outcome));
}

SocketAddress loopback(int family, int port) {
  SocketAddress a;
  if (family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.addr);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(static_cast<std::uint16_t>(port));
    in6->sin6_addr = in6addr_loopback;
    a.len = sizeof(sockaddr_in6);
  } else {
    auto* in = reinterpret_cast<sockaddr_in*>(&a.addr);
    in->sin_family = AF_INET;
    in->sin_port = htons(static_cast<std::uint16_t>(port));
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.len = sizeof(sockaddr_in);
  }
  return a;
}

// On a Debian machine localhost is ::1 before 127.0.0.1, and slurmd listens on IPv4 only unless
// told otherwise: a live slurmd must not be taken for a refusing one.
TEST(SlurmdProber, EveryAddressOfANameIsTriedBeforeItCountsAsRefused) {
  ServingListener ipv4_only(16);
  int dead_port = 0;
  {
    Listener gone(16);
    dead_port = gone.port;
  }
  auto both = [&](const ProbeTarget& t) {
    return std::vector<SocketAddress>{loopback(AF_INET6, t.port), loopback(AF_INET, t.port)};
  };
  auto r = probe_slurmds({{"alive", "localhost", ipv4_only.port()}, {"dead", "localhost", dead_port}}, 500, 2, both);
  ASSERT_EQ(2u, r.size());
  EXPECT_EQ(ProbeOutcome::connected, r[0].outcome) << "refused (or unreachable) on ::1, listening on 127.0.0.1";
  EXPECT_EQ(ProbeOutcome::refused, r[1].outcome) << "nothing listens on either address";
  auto none = [](const ProbeTarget&) { return std::vector<SocketAddress>{}; };
  EXPECT_EQ(ProbeOutcome::failed, probe_slurmds({{"x", "nowhere", 1}}, 500, 2, none)[0].outcome);
}

TEST(SlurmdProber, AFullAcceptBacklogTimesOut) {
  // Nobody accepts and the queue is full: the kernel drops the SYN, as for a dead host; the
  // handshake that fit in the queue is silent.
  Listener stuck(0);
  std::vector<ProbeTarget> targets(8, {"n", "127.0.0.1", stuck.port});
  auto r = probe_slurmds(targets, 300, 8);
  int timed_out = 0;
  for (const auto& x : r) timed_out += x.outcome == ProbeOutcome::timed_out;
  EXPECT_GE(timed_out, 1);
  EXPECT_EQ(ProbeOutcome::silent, r[0].outcome);
}

TEST(DeadNodeDetector, DownsTheDeadNodeOfARunningSafeJobAndResumesItWhenSlurmdIsBack) {
  FakeSlurm slurm;
  FakeFiles files;
  StateStore store(":memory:");
  for (int i = 1; i <= 3; ++i) {
    SlurmNode n = up_node();
    n.name = "n" + std::to_string(i);
    n.addr = "10.0.0." + std::to_string(i);
    slurm.nodes.push_back(n);
  }
  SlurmJob j;
  j.id = 7;
  j.state = SlurmJobState::running;
  j.nodes = "n[1-2]";
  j.num_nodes = 2;
  j.admin_comment = "safe: ws=ml retries=0/3 health=standard sig=USR1@30 hang=0 gpus=2 ckpt=/ck/1";
  j.start_time = 950;
  slurm.jobs.push_back(j);
  SafeConfig config;
  FailoverPlanner planner(config, slurm, store, files, slurm.output_pattern_dialect());
  DeadNodeDetector detector(slurm, store);
  planner.reconcile(slurm.jobs, slurm.nodes, 1000);

  auto targets = detector.targets(planner);
  ASSERT_EQ(2u, targets.size()) << "n3 runs no SaFE job";
  auto round = [&](ProbeOutcome n2, long long ms) {
    detector.apply({{"n1", ProbeOutcome::connected, "10.0.0.1:6818"}, {"n2", n2, "10.0.0.2:6818"}}, planner,
                   {3, 2}, ms, ms / 1000);
  };
  // slurmd restarting (refused connections, the host answers): its grace, said once.
  for (long long ms = 991'000; ms <= 996'000; ms += 1000) round(ProbeOutcome::refused, ms);
  EXPECT_EQ(0, slurm.count("down"));
  EXPECT_TRUE(detector.unanswered().empty()) << "a restarting slurmd is not taken for a silent node";
  auto lines = detector.take_log();
  ASSERT_EQ(1u, lines.size());
  EXPECT_NE(std::string::npos, lines[0].text.find("node n2: slurmd 10.0.0.2:6818 refuses connections: not running"))
      << lines[0].text;
  EXPECT_EQ(LogPriority::warning, lines[0].priority) << "a node's slurmd down wants an admin's look";
  round(ProbeOutcome::connected, 997'000);
  // The host dead (no answer).
  round(ProbeOutcome::timed_out, 1'001'000);
  round(ProbeOutcome::timed_out, 1'002'000);
  EXPECT_EQ(1u, detector.unanswered().count("n2"));
  EXPECT_EQ(0, slurm.count("down"));
  round(ProbeOutcome::timed_out, 1'003'000);
  ASSERT_EQ(1, slurm.count("down n2 SaFE-unreachable: slurmd 10.0.0.2:6818 no answer x3 over 2.0 s"));
  EXPECT_EQ(0, slurm.count("down n1"));
  round(ProbeOutcome::timed_out, 1'004'000);
  EXPECT_EQ(1, slurm.count("down")) << "once";
  EXPECT_EQ(1, detector.downed());
  auto actions = store.actions({});
  ASSERT_FALSE(actions.empty());
  EXPECT_EQ("node down", actions.back().action);
  EXPECT_EQ("n2", actions.back().node);

  // The planner sees the DOWN node and records it as a node fault with the probes' evidence.
  planner.reconcile(slurm.jobs, slurm.nodes, 1004);
  auto faults = store.node_faults("n2", 0);
  ASSERT_EQ(1u, faults.size());
  EXPECT_EQ("down", faults[0].kind);
  EXPECT_NE(std::string::npos, faults[0].detail.find("slurmd 10.0.0.2:6818 no answer x3"));

  // The job ended; n2 stays watched as long as it carries SaFE's reason, and comes back.
  slurm.jobs.clear();
  planner.reconcile(slurm.jobs, slurm.nodes, 1005);
  targets = detector.targets(planner);
  ASSERT_EQ(1u, targets.size());
  EXPECT_EQ("n2", targets[0].node);
  detector.apply({{"n2", ProbeOutcome::connected, "10.0.0.2:6818"}}, planner, {3, 2}, 1'006'000, 1006);
  EXPECT_EQ(0, slurm.count("resume"));
  detector.apply({{"n2", ProbeOutcome::connected, "10.0.0.2:6818"}}, planner, {3, 2}, 1'007'000, 1007);
  EXPECT_EQ(1, slurm.count("resume n2"));
  EXPECT_EQ(1, detector.resumed());
  EXPECT_EQ("node resumed", store.actions({}).back().action);
}

}  // namespace
}  // namespace safe
