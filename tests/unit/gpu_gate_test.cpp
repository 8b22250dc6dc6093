// The prolog/epilog gate: GPU lists, health levels, gate decisions, evidence, stray cleanup.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/sim_gpu_file.hpp"
#include "healthcheck/gpu_collector.hpp"
#include "prolog/gate_run.hpp"
#include "prolog/gpu_gate.hpp"
#include "prolog/job_evidence.hpp"
#include "prolog/stray_cleanup.hpp"
#include "tests/unit/fake_slurm.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

TEST(JobGpus, Lists) {
  EXPECT_EQ(parse_job_gpus("0,1"), (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_job_gpus("0-3,6"), (std::vector<int>{0, 1, 2, 3, 6}));
  EXPECT_EQ(parse_job_gpus(""), std::vector<int>{});
  EXPECT_FALSE(parse_job_gpus("a,b"));
  EXPECT_FALSE(parse_job_gpus("3-1"));
  EXPECT_FALSE(parse_job_gpus("1x"));
}

TEST(JobHealthLevel, OptionThenWorkspaceThenAdmission) {
  SafeConfig c;
  c.admission.default_health = HealthLevel::standard;
  WorkspaceConfig ws;
  ws.name = "ml";
  ws.default_health = HealthLevel::strict;
  c.workspaces.push_back(ws);
  EXPECT_EQ(job_health_level({}, c), HealthLevel::standard);
  EXPECT_EQ(job_health_level({{kSpankWorkspaceVar, "ml"}}, c), HealthLevel::strict);
  EXPECT_EQ(job_health_level({{kSpankWorkspaceVar, "ml"}, {kSpankHealthVar, "off"}}, c), HealthLevel::off);
  EXPECT_EQ(job_health_level({{kSpankHealthVar, "strict"}}, c), HealthLevel::strict);
  EXPECT_EQ(job_health_level({{kSpankHealthVar, "bogus"}}, c), HealthLevel::standard);
}

GpuQuery sim_query(const GpuSnapshot& s) {
  GpuQuery q;
  q.outcome = GpuQuery::Outcome::ok;
  q.snapshot = s;
  return q;
}

struct GateCase {
  const char* name;
  std::function<void(GpuSnapshot&)> change;
  std::vector<int> gpus;
  HealthLevel level;
  bool pass;
  bool drain = !pass;  // a job's strictness refuses without draining: only critical findings drain
};

class GateTest : public ::testing::TestWithParam<GateCase> {};

TEST_P(GateTest, Decides) {
  const GateCase& c = GetParam();
  GpuSnapshot s = healthy_sim_snapshot(8);
  c.change(s);
  GateResult g = evaluate_gate(sim_query(s), HealthConfig{}, c.gpus, c.level);
  EXPECT_EQ(g.pass, c.pass) << c.name << (g.blocking.empty() ? "" : ": " + g.blocking.front().detail);
  EXPECT_EQ(g.drain, c.drain);
}

const GateCase kGateCases[] = {
    {"healthy", [](GpuSnapshot&) {}, {0, 1}, HealthLevel::standard, true},
    {"lost_gpu_of_the_job", [](GpuSnapshot& s) { ASSERT_TRUE(apply_sim_fault(s, 1, SimFault::lost).ok()); }, {0, 1}, HealthLevel::standard, false},
    {"lost_gpu_of_another_job", [](GpuSnapshot& s) { ASSERT_TRUE(apply_sim_fault(s, 5, SimFault::lost).ok()); }, {0, 1}, HealthLevel::standard, true},
    {"ecc_blocks", [](GpuSnapshot& s) { ASSERT_TRUE(apply_sim_fault(s, 0, SimFault::ecc).ok()); }, {0}, HealthLevel::standard, false},
    {"off_never_blocks", [](GpuSnapshot& s) { ASSERT_TRUE(apply_sim_fault(s, 0, SimFault::ecc).ok()); }, {0}, HealthLevel::off, true},
    {"warning_passes_standard", [](GpuSnapshot& s) { s.gpus[0].pcie_replay = 5000; }, {0}, HealthLevel::standard, true},
    {"warning_blocks_strict", [](GpuSnapshot& s) { s.gpus[0].pcie_replay = 5000; }, {0}, HealthLevel::strict, false, false},
    {"leftover_memory_blocks_strict", [](GpuSnapshot& s) { s.gpus[0].memory_used_mib = 4000; }, {0}, HealthLevel::strict, false, false},
    {"leftover_memory_passes_standard", [](GpuSnapshot& s) { s.gpus[0].memory_used_mib = 4000; }, {0}, HealthLevel::standard, true},
    {"missing_gpu_blocks", [](GpuSnapshot& s) { s.gpus.pop_back(); }, {7}, HealthLevel::standard, false},
};

INSTANTIATE_TEST_SUITE_P(Gate, GateTest, ::testing::ValuesIn(kGateCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Gate, UnknownNeverBlocks) {
  GpuQuery q;
  q.outcome = GpuQuery::Outcome::timed_out;
  EXPECT_TRUE(evaluate_gate(q, HealthConfig{}, {0}, HealthLevel::strict).pass);
}

class GateRun : public ::testing::Test {
 protected:
  void SetUp() override {
    o.node = "n2";
    slurm.add_node("n2");
    o.self_exe = "/usr/sbin/safe-prolog";
    o.config.health.backend = GpuBackendKind::sim;
    o.config.health.state_dir = dir.path() + "/state";
    o.config.health.sim_dir = dir.path() + "/sim";
    o.fs = NodeFs(test::copy_fixture(dir, "node-healthy"));
    o.env = {{"SLURM_JOB_ID", "41"}, {"SLURM_JOB_GPUS", "0,1"}, {"SLURM_JOB_UID", "1001"}};
    runner.respond = [this](const std::vector<std::string>& argv) {
      EXPECT_EQ(argv.at(1), kGpuSnapshotChildFlag);
      return test::exited(0, to_json(gpus));
    };
  }
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  test::TempDir dir;
  GateOptions o;
  test::FakeProcessRunner runner;
  testing::FakeSlurm slurm;
  SlurmNode& node() { return *slurm.node("n2"); }
  GpuSnapshot gpus = healthy_sim_snapshot(8);
  std::ostringstream log;
};

TEST_F(GateRun, PrologPassesHealthyGpusWithoutSlurmCalls) {
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 0);
  EXPECT_TRUE(slurm.calls.empty());
}

TEST_F(GateRun, PrologDrainsAndFailsOnABadGpu) {
  ASSERT_TRUE(apply_sim_fault(gpus, 1, SimFault::lost).ok());
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 1);
  EXPECT_EQ(slurm.calls, (std::vector<std::string>{"read n2", "drain n2 SaFE: gpu1 lost: GPU is lost (simulated)"}));
  std::string evidence = read(o.config.health.state_dir + "/evidence/41.prolog.json");
  EXPECT_NE(evidence.find("\"stage\": \"prolog\""), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("gpu1 lost"), std::string::npos) << evidence;
  EXPECT_NE(log.str().find("safe-prolog: n2: job 41 refused"), std::string::npos) << log.str();
}

TEST_F(GateRun, PrologEvidenceNamesTheRunAndIsWrittenBeforeTheDrain) {
  o.env["SLURM_JOB_RESTART_COUNT"] = "2";
  ASSERT_TRUE(apply_sim_fault(gpus, 0, SimFault::ecc).ok());
  std::string path = o.config.health.state_dir + "/evidence/41.prolog.json";
  std::string at_drain;
  slurm.on_drain = [&] { at_drain = read(path); };
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 1);
  EXPECT_NE(at_drain.find("\"restart_count\": 2"), std::string::npos) << "safed must see the refusal first: " << at_drain;
  EXPECT_NE(at_drain.find("\"action\": \"refuse\""), std::string::npos) << at_drain;
  EXPECT_NE(read(path).find("\"action\": \"drain\""), std::string::npos) << read(path);
}

// --safe-health=strict is the user's: warnings the node's checks tolerate refuse that user's job
// (requeued by the prolog itself, safed places it elsewhere) and never drain the shared node.
TEST_F(GateRun, AStrictJobIsRefusedOnAWarningWithoutDrainingTheNode) {
  o.env[kSpankHealthVar] = "strict";
  gpus.gpus[1].pcie_replay = 5000;  // a warning
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 0) << "a failed prolog would make Slurm drain the node";
  EXPECT_EQ(slurm.count("drain"), 0);
  EXPECT_EQ(slurm.calls, (std::vector<std::string>{"requeue 41"}));
  std::string evidence = read(o.config.health.state_dir + "/evidence/41.prolog.json");
  EXPECT_NE(evidence.find("\"action\": \"refuse-job\""), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("PCIe replays=5000"), std::string::npos) << evidence;
  EXPECT_NE(log.str().find("refused by its --safe-health=strict"), std::string::npos) << log.str();
}

TEST_F(GateRun, AStrictInteractiveJobIsCancelledAsItCannotBeRequeued) {
  o.env[kSpankHealthVar] = "strict";
  gpus.gpus[1].pcie_replay = 5000;
  slurm.batch = false;
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 0);
  EXPECT_EQ(slurm.calls, (std::vector<std::string>{"requeue 41", "cancel 41"}));
}

TEST_F(GateRun, AStandardJobRunsDespiteAWarning) {
  gpus.gpus[1].pcie_replay = 5000;
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 0);
  EXPECT_TRUE(slurm.calls.empty());
}

TEST_F(GateRun, PrologKeepsAnAdminReasonButStillRefusesTheJob) {
  node().reason = "ADMIN: cabling";
  ASSERT_TRUE(apply_sim_fault(gpus, 0, SimFault::ecc).ok());
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 1);
  EXPECT_EQ(slurm.count("drain"), 0);
  EXPECT_EQ(node().reason, "ADMIN: cabling");
}

TEST_F(GateRun, PrologWithHealthOffDoesNothing) {
  o.env[kSpankHealthVar] = "off";
  ASSERT_TRUE(apply_sim_fault(gpus, 0, SimFault::ecc).ok());
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 0);
  EXPECT_TRUE(runner.calls.empty());
}

TEST_F(GateRun, PrologTimeoutLetsTheJobStart) {
  runner.respond = [](const auto&) { return test::timed_out(); };
  EXPECT_EQ(run_prolog(o, runner, slurm, log), 0);
  EXPECT_NE(log.str().find("GPU state unknown"), std::string::npos);
}

TEST_F(GateRun, EpilogClearsSimStraysAndWritesEvidence) {
  gpus.gpus[1].processes.push_back({5555, 1000, "rank1"});
  gpus.gpus[1].memory_used_mib = 1000;
  ASSERT_TRUE(save_sim_file(sim_file_path(o.config.health.sim_dir, "n2"), gpus).ok());
  EXPECT_EQ(run_epilog(o, runner, slurm, log, [](int, long long) { return false; }), 0);
  std::string evidence = read(o.config.health.state_dir + "/evidence/41.n2.epilog.json");
  EXPECT_NE(evidence.find("\"stray_pids_killed\": [\n  5555\n ]"), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("\"action\": \"none\""), std::string::npos);
  auto after = load_sim_file(sim_file_path(o.config.health.sim_dir, "n2"), 8);
  ASSERT_TRUE(after);
  EXPECT_TRUE(after->gpus[1].processes.empty());
  EXPECT_TRUE(slurm.calls.empty());
}

TEST_F(GateRun, EpilogKillsOnlyTheJobUsersProcesses) {
  gpus.backend = "rsmi";
  gpus.gpus[0].processes = {{4242, 10, ""}, {4343, 10, ""}};  // UID 1001 (the job's) and root
  gpus.gpus[1].processes = {{700, 10, ""}};                    // UID 1002
  std::vector<int> killed;
  std::vector<long long> as;
  run_epilog(o, runner, slurm, log, [&](int pid, long long uid) { return killed.push_back(pid), as.push_back(uid), true; });
  EXPECT_EQ(killed, std::vector<int>{4242});
  EXPECT_EQ(as, std::vector<long long>{1001}) << "the kill itself checks the owner again";
}

TEST_F(GateRun, EpilogDrainsOnACriticalFault) {
  ASSERT_TRUE(apply_sim_fault(gpus, 0, SimFault::xgmi).ok());
  EXPECT_EQ(run_epilog(o, runner, slurm, log, [](int, long long) { return true; }), 0);
  EXPECT_EQ(slurm.count("drain"), 1);
  std::string evidence = read(o.config.health.state_dir + "/evidence/41.n2.epilog.json");
  EXPECT_NE(evidence.find("\"action\": \"drain\""), std::string::npos) << evidence;
  EXPECT_NE(evidence.find("XGMI/NVLink links down"), std::string::npos) << evidence;
}

TEST_F(GateRun, ACleanEpilogLeavesNoRecord) {
  EXPECT_EQ(run_epilog(o, runner, slurm, log, [](int, long long) { return true; }), 0);
  EXPECT_FALSE(std::filesystem::exists(o.config.health.state_dir + "/evidence/41.n2.epilog.json"))
      << "a record per job, for ever, is what filled the evidence directory";
}

// The real kill: through a pidfd, and only when the process is the given user's.
TEST(StrayCleanup, KillsAProcessOnlyWhenItIsTheUsers) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pause();
    _exit(0);
  }
  NodeFs fs("/");
  EXPECT_FALSE(kill_if_owned(fs, child, static_cast<long long>(getuid()) + 1)) << "another user's";
  EXPECT_EQ(0, kill(child, 0)) << "still alive";
  EXPECT_TRUE(kill_if_owned(fs, child, getuid()));
  int status = 0;
  ASSERT_EQ(child, waitpid(child, &status, 0));
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_FALSE(kill_if_owned(fs, child, getuid())) << "gone";
}

TEST(StrayCleanup, RootAndOthersAreNeverKillable) {
  test::TempDir dir;
  NodeFs fs(test::copy_fixture(dir, "node-healthy"));
  EXPECT_EQ(killable(fs, {4242, 4343, 700, 99999}, 1001), std::vector<int>{4242});
  EXPECT_TRUE(killable(fs, {4343}, 0).empty());
  EXPECT_TRUE(killable(fs, {4242}, -1).empty());
  EXPECT_EQ(process_uid(fs, 700), 1002);
  EXPECT_EQ(process_uid(fs, 99999), -1);
}

}  // namespace
}  // namespace safe
