// The real ProcessRunner: output capture, exit codes, hard timeouts that kill the whole group.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>

#include "common/process_runner.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

using namespace std::chrono_literals;

TEST(ProcessRunner, CapturesStdoutStderrAndExitCode) {
  SystemProcessRunner runner;
  ProcessResult r = runner.run({"sh", "-c", "echo out; echo err >&2; exit 3"}, 5s);
  EXPECT_EQ(r.outcome, ProcessResult::Outcome::exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(runner.run({"true"}, 5s).ok());
}

TEST(ProcessRunner, MissingProgramFailsToStart) {
  SystemProcessRunner runner;
  ProcessResult r = runner.run({"/nonexistent/scontrol"}, 5s);
  EXPECT_EQ(r.outcome, ProcessResult::Outcome::failed_to_start);
  EXPECT_NE(r.describe().find("No such file"), std::string::npos) << r.describe();
}

TEST(ProcessRunner, TimeoutKillsTheWholeProcessGroup) {
  SystemProcessRunner runner;
  test::TempDir dir;
  std::string pidfile = dir.path() + "/child.pid";
  auto start = std::chrono::steady_clock::now();
  // The grandchild holds no pipe (redirected) and would outlive a plain kill of the child.
  ProcessResult r = runner.run({"sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $! > " + pidfile + "; sleep 30"}, 300ms);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(r.outcome, ProcessResult::Outcome::timed_out);
  EXPECT_LT(took, 3s);
  std::ifstream in(pidfile);
  int grandchild = 0;
  ASSERT_TRUE(in >> grandchild);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    // Killed but not yet reaped by its new parent counts as gone (a zombie runs nothing).
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    std::string pid, comm, state;
    gone = !(stat >> pid >> comm >> state) || state == "Z";
    if (!gone) std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(gone) << "grandchild " << grandchild << " survived the timeout";
}

TEST(ProcessRunner, ChildThatClosesOutputButHangsStillTimesOut) {
  SystemProcessRunner runner;
  ProcessResult r = runner.run({"sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, 300ms);
  EXPECT_EQ(r.outcome, ProcessResult::Outcome::timed_out);
}

TEST(ProcessRunner, OutputIsBounded) {
  SystemProcessRunner runner(1000);
  ProcessResult r = runner.run({"sh", "-c", "head -c 100000 /dev/zero"}, 5s);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out.size(), 1000u);
}

TEST(ProcessRunner, SignaledChild) {
  SystemProcessRunner runner;
  ProcessResult r = runner.run({"sh", "-c", "kill -TERM $$"}, 5s);
  EXPECT_EQ(r.outcome, ProcessResult::Outcome::signaled);
  EXPECT_EQ(r.signal, SIGTERM);
}

}  // namespace
}  // namespace safe
