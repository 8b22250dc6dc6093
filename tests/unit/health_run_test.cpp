// Whole runs of the checker against a fixture tree, a scripted GPU child and a fake slurmctld:
// the drain/resume protocol end to end, with the per-check history kept on disk between runs.
#include <gtest/gtest.h>
#include <sys/file.h>

#include <fcntl.h>
#include <fstream>
#include <set>
#include <sstream>

#include "common/sim_gpu_file.hpp"
#include "healthcheck/health_run.hpp"
#include "tests/unit/fake_slurm.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

class HealthRun : public ::testing::Test {
 protected:
  void SetUp() override {
    options.fs = NodeFs(test::copy_fixture(dir, "node-healthy"));
    options.node = "n1";
    slurm.add_node("n1");
    options.self_exe = "/usr/sbin/safe-healthcheck";
    options.config.health.backend = GpuBackendKind::sim;
    options.config.health.state_dir = dir.path() + "/state";
    options.config.health.metrics_dir = dir.path() + "/node-exporter";  // made by the test that reads it
    options.config.health.expected_gpus = 8;
    runner.respond = [this](const std::vector<std::string>& argv) -> ProcessResult {
      if (argv.at(1) != kGpuSnapshotChildFlag) return ProcessResult{};
      if (gpu_hangs) return test::timed_out();
      return test::exited(0, to_json(gpus));
    };
  }
  RunReport run() { return run_health_once(options, runner, slurm); }
  void inject(int gpu, SimFault fault) { ASSERT_TRUE(apply_sim_fault(gpus, gpu, fault).ok()); }

  test::TempDir dir;
  RunOptions options;
  test::FakeProcessRunner runner;
  testing::FakeSlurm slurm;
  SlurmNode& node() { return *slurm.node("n1"); }
  GpuSnapshot gpus = healthy_sim_snapshot(8);
  bool gpu_hangs = false;
};

TEST_F(HealthRun, HealthyNodeIsLeftAlone) {
  RunReport r = run();
  EXPECT_EQ(r.status, "healthy") << summary_line(r);
  EXPECT_EQ(r.exit_code, kExitHealthy);
  EXPECT_EQ(slurm.calls, std::vector<std::string>{"read n1"});
  EXPECT_EQ(r.results.size(), 16u);
  EXPECT_NE(summary_line(r).find("safe-healthcheck: n1: healthy (16 pass, 0 fail, 0 unknown"), std::string::npos)
      << summary_line(r);
}

TEST_F(HealthRun, EachRunLeavesItsMetricsForNodeExporterWhenItsDirectoryExists) {
  const std::string file = dir.path() + "/node-exporter/safe-healthcheck-n1.prom";
  run();
  EXPECT_FALSE(std::ifstream(file)) << "no node_exporter directory: nothing written";
  ASSERT_EQ(0, ::mkdir((dir.path() + "/node-exporter").c_str(), 0755));
  inject(3, SimFault::ecc);
  RunReport r = run();
  std::ifstream in(file);
  ASSERT_TRUE(in) << summary_line(r);
  std::stringstream text;
  text << in.rdbuf();
  const std::string m = text.str();
  EXPECT_NE(m.find("safe_health_last_run_timestamp_seconds{node=\"n1\"} " + std::to_string(r.time) + "\n"),
            std::string::npos) << m;
  EXPECT_NE(m.find("safe_health_status{node=\"n1\",status=\"unhealthy\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("safe_health_status{node=\"n1\",status=\"healthy\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("safe_health_check{node=\"n1\",check=\"ecc_uncorrectable\",severity=\"critical\",status=\"fail\"} 1\n"),
            std::string::npos) << m;
  // node_exporter refuses a file that repeats a series: every check appears once.
  std::set<std::string> series;
  std::istringstream lines(m);
  for (std::string line; std::getline(lines, line);) {
    if (line[0] == '#') continue;
    EXPECT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second) << line;
  }
}

TEST_F(HealthRun, UncorrectableEccDrainsThenResumesAfterThreeCleanRuns) {
  inject(3, SimFault::ecc);
  RunReport r = run();
  EXPECT_EQ(r.exit_code, kExitCritical);
  EXPECT_EQ(r.decision.action, NodeAction::drain);
  EXPECT_EQ(node().reason, "SaFE: gpu3 uncorrectable ECC=2");
  EXPECT_EQ(node().state, "IDLE+DRAIN");
  run();  // still failing: already drained, nothing more
  EXPECT_EQ(slurm.count("drain"), 1);
  inject(3, SimFault::clear);
  EXPECT_EQ(run().decision.action, NodeAction::none);
  EXPECT_EQ(run().decision.action, NodeAction::none);
  EXPECT_EQ(slurm.count("resume"), 0);
  RunReport third = run();
  EXPECT_EQ(third.decision.action, NodeAction::resume) << summary_line(third);
  EXPECT_EQ(node().state, "IDLE");
  EXPECT_EQ(node().reason, "");
}

TEST_F(HealthRun, OrdinaryCriticalCheckNeedsTwoRuns) {
  inject(1, SimFault::hot);
  RunReport first = run();
  EXPECT_EQ(first.status, "failing");
  EXPECT_EQ(first.decision.action, NodeAction::none);
  RunReport second = run();
  EXPECT_EQ(second.decision.action, NodeAction::drain);
  EXPECT_EQ(node().reason, "SaFE: gpu1 temperature 103C >= 95C");
}

TEST_F(HealthRun, AdminDrainIsNeverTouchedOrResumed) {
  node().state = "IDLE+DRAIN";
  node().reason = "ADMIN SHUTDOWN";
  inject(0, SimFault::lost);
  run();
  inject(0, SimFault::clear);
  for (int i = 0; i < 5; ++i) run();
  EXPECT_EQ(slurm.count("drain"), 0);
  EXPECT_EQ(slurm.count("resume"), 0);
  EXPECT_EQ(node().reason, "ADMIN SHUTDOWN");
}

// safed puts its quarantine back over a "SaFE:" drain within a second; a run that read the node's
// own drain before that must not resume the quarantine after it (seen in CI: quarantine_lemon).
TEST_F(HealthRun, ADrainThatStoppedBeingItsOwnDuringTheRunIsNotResumed) {
  inject(3, SimFault::ecc);
  run();
  inject(3, SimFault::clear);
  run();
  run();
  slurm.after_read = [this] {
    node().reason = "SaFE-quarantine: 3 faults in 24h";
    slurm.after_read = nullptr;
  };
  RunReport r = run();
  EXPECT_EQ(r.decision.action, NodeAction::none) << summary_line(r);
  EXPECT_EQ(slurm.count("resume"), 0);
  EXPECT_EQ(node().state, "IDLE+DRAIN");
}

TEST_F(HealthRun, QuarantinedNodeIsNeverResumed) {
  node().state = "IDLE+DRAIN";
  node().reason = "SaFE-quarantine: 3 faults in 24h";
  for (int i = 0; i < 5; ++i) run();
  EXPECT_EQ(slurm.count("resume"), 0);
}

TEST_F(HealthRun, UnreadableNodeStateMeansNoAction) {
  slurm.reachable = false;
  inject(3, SimFault::ecc);
  RunReport r = run();
  EXPECT_EQ(r.exit_code, kExitCritical);
  EXPECT_EQ(r.decision.action, NodeAction::none);
  EXPECT_NE(r.decision.why.find("unreadable"), std::string::npos) << r.decision.why;
  EXPECT_EQ(slurm.count("drain"), 0);
}

TEST_F(HealthRun, StartupRunNeverCallsTheController) {
  options.slurmd_instance = "4242:99";
  inject(3, SimFault::ecc);
  RunReport r = run();
  EXPECT_TRUE(r.startup_run);
  EXPECT_TRUE(slurm.calls.empty());
  RunReport next = run();  // same slurmd: no longer the startup run; the failure streak counted on
  EXPECT_FALSE(next.startup_run);
  EXPECT_EQ(next.decision.action, NodeAction::drain);
  options.slurmd_instance = "5151:12";  // slurmd restarted
  EXPECT_TRUE(run().startup_run);
}

TEST_F(HealthRun, GpuTimeoutIsUnknownUntilItRepeats) {
  gpu_hangs = true;
  RunReport first = run();
  EXPECT_EQ(first.status, "healthy") << summary_line(first);
  EXPECT_EQ(first.decision.action, NodeAction::none);
  int unknowns = 0;
  for (const auto& c : first.results) unknowns += c.status == CheckStatus::unknown;
  EXPECT_EQ(unknowns, 10);
  run();
  RunReport third = run();  // health.unknown_runs_before_fail = 3
  EXPECT_EQ(third.decision.action, NodeAction::drain) << summary_line(third);
  EXPECT_NE(node().reason.find("unknown 3 runs"), std::string::npos) << node().reason;
}

TEST_F(HealthRun, WarningsMarkTheNodeSuspectWithoutDraining) {
  gpus.gpus[2].ecc_correctable = 20000;
  RunReport r = run();
  EXPECT_EQ(r.status, "suspect");
  EXPECT_EQ(r.exit_code, kExitSuspect);
  EXPECT_EQ(slurm.count("drain"), 0);
  std::ifstream last(options.config.health.state_dir + "/n1.last.json");
  std::stringstream text;
  text << last.rdbuf();
  EXPECT_NE(text.str().find("\"status\": \"suspect\""), std::string::npos) << text.str();
}

TEST_F(HealthRun, DisabledChecksDoNotRun) {
  options.config.health.disabled_checks = {"ecc_uncorrectable"};
  inject(3, SimFault::ecc);
  RunReport r = run();
  EXPECT_EQ(r.status, "healthy");
  for (const auto& c : r.results) {
    EXPECT_NE(c.check, "ecc_uncorrectable");
  }
}

TEST_F(HealthRun, ReportOnlyModeMakesNoSlurmCalls) {
  options.use_slurm = false;
  inject(3, SimFault::ecc);
  RunReport r = run();
  EXPECT_EQ(r.exit_code, kExitCritical);
  EXPECT_TRUE(slurm.calls.empty());
}

TEST_F(HealthRun, StrayUseCheckedOnlyOnIdleNodes) {
  gpus.gpus[4].processes.push_back({31337, 500, "leftover"});
  gpus.gpus[4].memory_used_mib = 500;
  node().state = "MIXED";
  EXPECT_EQ(run().status, "healthy");
  node().state = "IDLE";
  RunReport idle = run();
  EXPECT_EQ(idle.status, "suspect") << summary_line(idle);
}

TEST_F(HealthRun, SecondConcurrentRunIsRefused) {
  std::filesystem::create_directories(options.config.health.state_dir);
  int fd = open((options.config.health.state_dir + "/n1.lock").c_str(), O_RDWR | O_CREAT, 0644);
  ASSERT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0);
  RunReport r = run();
  close(fd);
  EXPECT_EQ(r.exit_code, kExitNotRun);
  EXPECT_NE(summary_line(r).find("another run for n1 is in progress"), std::string::npos);
  EXPECT_TRUE(slurm.calls.empty());
}

// A state directory that takes no writes (here: a directory where the lock file should be, which
// even root cannot open for writing): the run is refused with the reason, not taken for a second
// run in progress.
TEST_F(HealthRun, ALockFileThatCannotBeOpenedIsSaidSo) {
  std::filesystem::create_directories(options.config.health.state_dir + "/n1.lock");
  RunReport r = run();
  EXPECT_EQ(r.exit_code, kExitNotRun);
  EXPECT_NE(summary_line(r).find("cannot open its lock file " + options.config.health.state_dir + "/n1.lock: Is a directory"),
            std::string::npos)
      << summary_line(r);
}

// A full state disk: the history cannot be saved. The run still acts on what it found (a critical
// fault drains), says why its counts do not advance, drains nothing on a healthy node, and leaves
// the saved history whole; once the disk takes writes again the counts go on from it.
TEST_F(HealthRun, AHistoryThatCannotBeSavedIsSaidSoAndKeptWhole) {
  const std::string& state = options.config.health.state_dir;
  inject(3, SimFault::ecc);
  run();
  ASSERT_EQ(node().state, "IDLE+DRAIN");
  inject(3, SimFault::clear);
  ASSERT_EQ(run().decision.action, NodeAction::none);  // 1 clean run of 3 saved
  std::filesystem::create_directories(state + "/n1.json.tmp");  // no new history can be written
  for (int i = 0; i < 3; ++i) {
    RunReport r = run();
    EXPECT_EQ(r.decision.action, NodeAction::none) << "no resume on counts it cannot keep: " << summary_line(r);
    EXPECT_NE(summary_line(r).find("history not saved: " + state + "/n1.json.tmp: Is a directory"), std::string::npos)
        << summary_line(r);
  }
  EXPECT_EQ(slurm.count("drain"), 1) << "nothing more";
  std::filesystem::remove(state + "/n1.json.tmp");
  EXPECT_EQ(run().decision.action, NodeAction::none);  // 2 of 3, from the history saved before
  RunReport resumed = run();
  EXPECT_EQ(resumed.decision.action, NodeAction::resume) << summary_line(resumed);
  EXPECT_EQ(resumed.state_error, "");
}

TEST_F(HealthRun, JsonReportHasEveryCheck) {
  inject(3, SimFault::ecc);
  std::string json = report_json(run());
  EXPECT_NE(json.find("\"check\": \"ecc_uncorrectable\""), std::string::npos);
  EXPECT_NE(json.find("\"action\": \"drain\""), std::string::npos);
  EXPECT_NE(json.find("\"reason\": \"SaFE: gpu3 uncorrectable ECC=2\""), std::string::npos);
}

}  // namespace
}  // namespace safe
