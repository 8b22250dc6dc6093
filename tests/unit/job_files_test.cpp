// LocalJobFiles: the files safed reads about a job, on a real temporary directory.
#include "controller/safed/job_files.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace safe {
namespace {

class JobFilesTest : public ::testing::Test {
 protected:
  JobFilesTest() {
    dir = std::filesystem::temp_directory_path() / ("safe-job-files-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir / "evidence");
  }
  ~JobFilesTest() override { std::filesystem::remove_all(dir); }
  void write(const std::filesystem::path& p, const std::string& text) {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::filesystem::path dir;
};

TEST_F(JobFilesTest, ReadsCriticalEvidenceOfTheJobOnly) {
  write(dir / "evidence/42.json",
        R"({"job_id": "42", "node": "n3", "stage": "epilog", "failing_checks": [
             {"check": "gpu_ecc", "severity": "critical", "detail": "gpu2 uncorrectable ECC=2"},
             {"check": "gpu_temp", "severity": "warning", "detail": "gpu1 91 C"}]})");
  write(dir / "evidence/42.prolog.json",
        R"({"node": "n4", "failing_checks": [{"check": "gpu_lost", "severity": "critical", "detail": "gpu0"}]})");
  write(dir / "evidence/421.json",
        R"({"node": "n9", "failing_checks": [{"check": "x", "severity": "critical", "detail": "other job"}]})");
  write(dir / "evidence/43.json", "not json");
  LocalJobFiles files((dir / "evidence").string());
  auto faults = files.evidence(42);
  ASSERT_EQ(2u, faults.size());
  std::sort(faults.begin(), faults.end(), [](auto& a, auto& b) { return a.node < b.node; });
  EXPECT_EQ("n3", faults[0].node);
  EXPECT_EQ("epilog", faults[0].kind);
  EXPECT_EQ("gpu_ecc gpu2 uncorrectable ECC=2", faults[0].detail);
  EXPECT_EQ("n4", faults[1].node);
  EXPECT_TRUE(files.evidence(43).empty()) << "unreadable evidence is ignored";
  EXPECT_TRUE(LocalJobFiles("/nonexistent").evidence(42).empty());
}

TEST_F(JobFilesTest, PrologRefusalOfExactlyThatRun) {
  write(dir / "evidence/42.prolog.json",
        R"({"node": "n4", "restart_count": 1, "failing_checks": [
             {"check": "xgmi", "severity": "critical", "detail": "gpu0 1 of 7 XGMI/NVLink links down"}]})");
  write(dir / "evidence/43.prolog.json",
        R"({"node": "n5", "failing_checks": [{"check": "gpu_lost", "severity": "critical", "detail": "gpu0"}]})");
  LocalJobFiles files((dir / "evidence").string());
  auto refusal = files.prolog_refusal(42, 1);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ("n4", refusal->node);
  EXPECT_EQ("prolog", refusal->kind);
  EXPECT_EQ("xgmi gpu0 1 of 7 XGMI/NVLink links down", refusal->detail);
  EXPECT_FALSE(files.prolog_refusal(42, 0)) << "an earlier run was not refused";
  EXPECT_FALSE(files.prolog_refusal(43, 0)) << "evidence without a restart count names no run";
  EXPECT_FALSE(files.prolog_refusal(44, 0));
  EXPECT_FALSE(LocalJobFiles("").prolog_refusal(42, 1));
}

TEST_F(JobFilesTest, NewestCompleteCheckpointAndProgress) {
  LocalJobFiles files("");
  EXPECT_EQ(0, files.newest_checkpoint_time((dir / "ckpt").string(), "COMPLETE"));
  write(dir / "ckpt/step-10/state", "10");
  EXPECT_EQ(0, files.newest_checkpoint_time((dir / "ckpt").string(), "COMPLETE")) << "torn checkpoint";
  write(dir / "ckpt/step-10/COMPLETE", "");
  EXPECT_GT(files.newest_checkpoint_time((dir / "ckpt").string(), "COMPLETE"), 0);
  write(dir / "out.log", "hello\n");
  FileProgress p = files.stat_file((dir / "out.log").string());
  EXPECT_TRUE(p.exists);
  EXPECT_EQ(6, p.size);
  EXPECT_FALSE(files.stat_file("").exists);
  EXPECT_EQ((dir / "ckpt").string() + "/.safe-heartbeat", heartbeat_path((dir / "ckpt").string()));
  EXPECT_EQ("", heartbeat_path(""));
}

TEST_F(JobFilesTest, TailIsTheEndOfTheFile) {
  write(dir / "out", "step 1\nsrun: error: Unable to create step for job 7: x\n");
  LocalJobFiles files("");
  EXPECT_EQ("srun: error: Unable to create step for job 7: x\n", files.tail((dir / "out").string(), 48));
  EXPECT_EQ("step 1\nsrun: error: Unable to create step for job 7: x\n", files.tail((dir / "out").string(), 4096));
  EXPECT_EQ("", files.tail((dir / "missing").string(), 4096));
}

}  // namespace
}  // namespace safe
