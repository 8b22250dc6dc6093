// AsyncJobFiles: what safed reads about a job, on a real temporary directory, through a real
// DeadlineReader. Hostile files (FIFOs, devices, links, others' files) answer "unknown" at once.
#include "controller/safed/job_files.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <ctime>
#include <filesystem>
#include <fstream>

namespace safe {
namespace {

constexpr uid_t kOther = 65534;  // nobody

class JobFilesTest : public ::testing::Test {
 protected:
  JobFilesTest() : reader({2, std::chrono::milliseconds(2000), 4}, [this] { return clock.load(); }),
                   files((dir() / "evidence").string(), reader, reader) {
    std::filesystem::create_directories(dir() / "evidence");
  }
  ~JobFilesTest() override { std::filesystem::remove_all(dir()); }
  static std::filesystem::path dir() {
    return std::filesystem::temp_directory_path() / ("safe-job-files-" + std::to_string(getpid()));
  }
  void write(const std::filesystem::path& p, const std::string& text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  // Asks for an answer newer than any before it until it is no longer pending, as successive
  // planner passes would.
  template <class Ask>
  auto settled(Ask ask) {
    long long since = ++clock;
    for (int i = 0; i < 100; ++i) {
      auto got = ask(since);
      if (!got.is_pending()) return got;
      // Progress reads are not urgent (the planner never waits for them): poll a little.
      if (!reader.wait_for_urgent(std::chrono::milliseconds(100))) usleep(5000);
    }
    return ask(since);
  }
  uid_t me = geteuid();
  std::atomic<long long> clock{1000};  // the reader's clock: each settled() asks for a newer read
  DeadlineReader reader;
  AsyncJobFiles files;
};

TEST_F(JobFilesTest, ReadsCriticalEvidenceOfTheJobsAttemptFromEachNode) {
  long long now = std::time(nullptr);
  std::string t = std::to_string(now);
  write(dir() / "evidence/42.n3.epilog.json",
        R"({"job_id": "42", "node": "n3", "stage": "epilog", "time": )" + t + R"(, "failing_checks": [
             {"check": "gpu_ecc", "severity": "critical", "detail": "gpu2 uncorrectable ECC=2"},
             {"check": "gpu_temp", "severity": "warning", "detail": "gpu1 91 C"}]})");
  write(dir() / "evidence/42.n4.epilog.json",
        R"({"node": "n4", "time": )" + t + R"(, "failing_checks": [{"check": "gpu_lost", "severity": "critical", "detail": "gpu0"}]})");
  write(dir() / "evidence/42.n5.epilog.json",
        R"({"node": "n5", "time": 100, "failing_checks": [{"check": "x", "severity": "critical", "detail": "an earlier run"}]})");
  write(dir() / "evidence/421.n3.epilog.json",
        R"({"node": "n3", "time": )" + t + R"(, "failing_checks": [{"check": "x", "severity": "critical", "detail": "other job"}]})");
  write(dir() / "evidence/43.n3.epilog.json", "not json");
  auto faults = settled([&](long long since) { return files.epilog_evidence(42, {"n3", "n4", "n5", "../x"}, now - 60, since); });
  ASSERT_TRUE(faults.is_known());
  ASSERT_EQ(2u, faults.value.size());
  std::sort(faults.value.begin(), faults.value.end(), [](auto& a, auto& b) { return a.node < b.node; });
  EXPECT_EQ("n3", faults.value[0].node);
  EXPECT_EQ("epilog", faults.value[0].kind);
  EXPECT_EQ("gpu_ecc gpu2 uncorrectable ECC=2", faults.value[0].detail);
  EXPECT_EQ("n4", faults.value[1].node);
  auto broken = settled([&](long long since) { return files.epilog_evidence(43, {"n3"}, 0, since); });
  EXPECT_TRUE(broken.is_known() && broken.value.empty()) << "unreadable evidence is ignored";
}

TEST_F(JobFilesTest, EvidenceIsReadWhileUsersFilesHoldEveryWorker) {
  // Users' files on a hung mount take every worker of their reader (1 worker, none to replace a
  // stuck one); the evidence that classifies a failure is read on its own reader all the same.
  DeadlineReader users({1, std::chrono::milliseconds(50), 0}, [this] { return clock.load(); });
  DeadlineReader evidence({1, std::chrono::milliseconds(2000), 4}, [this] { return clock.load(); });
  AsyncJobFiles split((dir() / "evidence").string(), users, evidence);
  struct Gate {
    std::mutex m;
    std::condition_variable cv;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();  // outlives the test: the stuck worker holds it
  (void)users.get("hung mount", 0, 0, [gate] {
    std::unique_lock l(gate->m);
    gate->cv.wait(l, [&] { return gate->open; });
    return std::any();
  }, true);
  users.wait_for_urgent(std::chrono::milliseconds(500));
  ASSERT_EQ(1, users.stats().stuck);
  long long now = std::time(nullptr);
  write(dir() / "evidence/44.n1.epilog.json",
        R"({"node": "n1", "time": )" + std::to_string(now) +
            R"(, "failing_checks": [{"check": "gpu_lost", "severity": "critical", "detail": "gpu0"}]})");
  Observed<std::vector<NodeFault>> faults;
  for (int i = 0; i < 100 && faults.is_pending(); ++i) {
    faults = split.epilog_evidence(44, {"n1"}, now - 60, 1000);
    evidence.wait_for_urgent(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(faults.is_known()) << faults.why;
  ASSERT_EQ(1u, faults.value.size());
  EXPECT_EQ("n1", faults.value[0].node);
  // A user's file asked for now is answered too: "unknown" after one deadline, never pending.
  write(dir() / "out.txt", "step 1");
  Observed<FileProgress> progress;
  for (int i = 0; i < 100 && progress.is_pending(); ++i) {
    progress = split.progress((dir() / "out.txt").string(), me, 1000);
    usleep(10000);
  }
  EXPECT_FALSE(progress.is_pending());
  EXPECT_EQ("the read timed out", progress.why) << "no worker was free to read it";
  {
    std::lock_guard l(gate->m);
    gate->open = true;
  }
  gate->cv.notify_all();
}

TEST_F(JobFilesTest, EvidenceNotWrittenByRootIsIgnored) {
  if (me != 0) GTEST_SKIP() << "needs root to give a file away";
  write(dir() / "evidence/44.n1.epilog.json",
        R"({"node": "n1", "time": 1, "failing_checks": [{"check": "gpu_lost", "severity": "critical", "detail": "gpu0"}]})");
  ASSERT_EQ(0, chown((dir() / "evidence/44.n1.epilog.json").c_str(), kOther, kOther));
  auto faults = settled([&](long long since) { return files.epilog_evidence(44, {"n1"}, 0, since); });
  EXPECT_TRUE(faults.is_known() && faults.value.empty()) << "a user's file could make their failure a node fault";
}

TEST_F(JobFilesTest, PrologRefusalOfExactlyThatRun) {
  write(dir() / "evidence/42.prolog.json",
        R"({"node": "n4", "restart_count": 1, "failing_checks": [
             {"check": "xgmi", "severity": "critical", "detail": "gpu0 1 of 7 XGMI/NVLink links down"}]})");
  write(dir() / "evidence/43.prolog.json",
        R"({"node": "n5", "failing_checks": [{"check": "gpu_lost", "severity": "critical", "detail": "gpu0"}]})");
  auto refusal = settled([&](long long since) { return files.prolog_refusal(42, 1, since); });
  ASSERT_TRUE(refusal.is_known() && refusal.value.has_value());
  EXPECT_EQ("n4", refusal.value->node);
  EXPECT_EQ("prolog", refusal.value->kind);
  EXPECT_EQ("xgmi gpu0 1 of 7 XGMI/NVLink links down", refusal.value->detail);
  EXPECT_FALSE(settled([&](long long s) { return files.prolog_refusal(42, 0, s); }).value) << "an earlier run was not refused";
  EXPECT_FALSE(settled([&](long long s) { return files.prolog_refusal(43, 0, s); }).value) << "no restart count names no run";
  EXPECT_FALSE(settled([&](long long s) { return files.prolog_refusal(44, 0, s); }).value);
}

TEST_F(JobFilesTest, ProgressOfARegularFileOfTheJobsUserOnly) {
  write(dir() / "out.log", "hello\n");
  auto p = settled([&](long long s) { return files.progress((dir() / "out.log").string(), me, s); });
  ASSERT_TRUE(p.is_known());
  EXPECT_EQ(6, p.value.size);
  EXPECT_FALSE(settled([&](long long s) { return files.progress((dir() / "missing").string(), me, s); }).is_known());
  EXPECT_FALSE(settled([&](long long s) { return files.progress("/dev/null", me, s); }).is_known()) << "a device";
  ASSERT_EQ(0, mkfifo((dir() / "fifo").c_str(), 0600));
  auto fifo = settled([&](long long s) { return files.progress((dir() / "fifo").string(), me, s); });
  EXPECT_FALSE(fifo.is_known()) << "a FIFO is not a job's output, and looking must not block";
  std::filesystem::create_symlink(dir() / "out.log", dir() / "link");
  EXPECT_FALSE(settled([&](long long s) { return files.progress((dir() / "link").string(), me, s); }).is_known());
  EXPECT_FALSE(settled([&](long long s) { return files.progress((dir() / "out.log").string(), kOther, s); }).is_known())
      << "another user's file";
  EXPECT_EQ((dir() / "ckpt").string() + "/.safe-heartbeat", heartbeat_path((dir() / "ckpt").string()));
  EXPECT_EQ("", heartbeat_path(""));
}

TEST_F(JobFilesTest, TailIsTheEndOfTheFileAndNeverBlocksOnAFifo) {
  write(dir() / "out", "step 1\nsrun: error: Unable to create step for job 7: x\n");
  auto tail = [&](const std::string& name, std::size_t bytes) {
    return settled([&](long long s) { return files.tail((dir() / name).string(), me, bytes, s); });
  };
  EXPECT_EQ("srun: error: Unable to create step for job 7: x\n", tail("out", 48).value);
  EXPECT_EQ("step 1\nsrun: error: Unable to create step for job 7: x\n", tail("out", 4096).value);
  EXPECT_FALSE(tail("missing", 4096).is_known());
  ASSERT_EQ(0, mkfifo((dir() / "fifo").c_str(), 0600));
  auto fifo = tail("fifo", 4096);  // an open(O_RDONLY) would wait for a writer for ever
  EXPECT_FALSE(fifo.is_known());
  EXPECT_NE(std::string::npos, fifo.why.find("not a regular file")) << fifo.why;
}

TEST_F(JobFilesTest, NewestCompleteCheckpointOfTheJobsUser) {
  auto newest = [&](uid_t owner) {
    return settled([&](long long s) { return files.newest_checkpoint_ns((dir() / "ckpt").string(), "COMPLETE", owner, s, s); });
  };
  EXPECT_FALSE(newest(me).is_known()) << "no directory";
  write(dir() / "ckpt/step-10/state", "10");
  EXPECT_EQ(0, newest(me).value) << "torn checkpoint";
  write(dir() / "ckpt/step-10/COMPLETE", "");
  EXPECT_GT(newest(me).value, 0);
  EXPECT_FALSE(newest(kOther).is_known()) << "the directory is not that user's";
}

TEST_F(JobFilesTest, ForgettingEvidenceDeletesTheJobsFilesOnly) {
  write(dir() / "evidence/42.n1.epilog.json", "{}");
  write(dir() / "evidence/42.prolog.json", "{}");
  write(dir() / "evidence/43.n1.epilog.json", "{}");
  files.forget_evidence(42, "n[1-2]");
  for (int i = 0; i < 100 && std::filesystem::exists(dir() / "evidence/42.n1.epilog.json"); ++i)
    reader.wait_for_urgent(std::chrono::milliseconds(10)), usleep(10000);
  EXPECT_FALSE(std::filesystem::exists(dir() / "evidence/42.n1.epilog.json"));
  EXPECT_FALSE(std::filesystem::exists(dir() / "evidence/42.prolog.json"));
  EXPECT_TRUE(std::filesystem::exists(dir() / "evidence/43.n1.epilog.json"));
}

TEST_F(JobFilesTest, SweepDeletesOldEvidenceOnly) {
  // An old record, and the temporary name of a writer that died before its rename.
  for (const char* old : {"evidence/1.n1.epilog.json", "evidence/3.n1.epilog.json.Ab12Cd"}) {
    write(dir() / old, "{}");
    std::filesystem::last_write_time(dir() / old, std::filesystem::file_time_type::clock::now() - std::chrono::hours(24 * 8));
  }
  write(dir() / "evidence/2.n1.epilog.json", "{}");
  files.sweep_evidence(static_cast<long long>(std::time(nullptr)) - 7 * 86400, 1000);
  auto left = [&] {
    return std::filesystem::exists(dir() / "evidence/1.n1.epilog.json") ||
           std::filesystem::exists(dir() / "evidence/3.n1.epilog.json.Ab12Cd");
  };
  for (int i = 0; i < 100 && left(); ++i) usleep(10000);
  EXPECT_FALSE(std::filesystem::exists(dir() / "evidence/1.n1.epilog.json"));
  EXPECT_FALSE(std::filesystem::exists(dir() / "evidence/3.n1.epilog.json.Ab12Cd"));
  EXPECT_TRUE(std::filesystem::exists(dir() / "evidence/2.n1.epilog.json"));
}

}  // namespace
}  // namespace safe
