// The fencing of superseded attempts' checkpoints: labels, fence files, the rule, and fences
// written into a real directory (common/checkpoint_fence.hpp).
#include "common/checkpoint_fence.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/checkpoint_scan.hpp"

namespace safe {
namespace {

namespace fs = std::filesystem;

TEST(CheckpointLabel, ReadsJobAndAttemptAnywhereInTheMarker) {
  EXPECT_EQ((CheckpointLabel{"42", 3}), parse_checkpoint_label("job=42 attempt=3\n"));
  EXPECT_EQ((CheckpointLabel{"42_7", 1}), parse_checkpoint_label("written by rank 0\nattempt=1 job=42_7"));
  EXPECT_EQ("job=42 attempt=3\n", checkpoint_label_text({"42", 3}));
  EXPECT_EQ((CheckpointLabel{"42", 3}), parse_checkpoint_label(checkpoint_label_text({"42", 3})));
  for (const char* bad : {"", "x", "job=42", "attempt=2", "job= attempt=2", "job=4x2 attempt=2", "job=42 attempt=0",
                          "job=42 attempt=-1", "job=42 attempt=2b", "myjob=42 attempt=2", "job=42 attempt=99999999999"})
    EXPECT_FALSE(parse_checkpoint_label(bad)) << bad;
}

TEST(CheckpointFenceFile, NamesAndTextRoundTrip) {
  EXPECT_EQ("job-42.attempt-3", fence_file_name({"42", 3}));
  EXPECT_EQ((CheckpointLabel{"42", 3}), parse_fence_file_name("job-42.attempt-3"));
  for (const char* bad : {"job-42", "job-.attempt-3", "job-42.attempt-0", ".tmp.host.1.2", "job-42.attempt-3x"})
    EXPECT_FALSE(parse_fence_file_name(bad)) << bad;
  EXPECT_EQ("step-40", parse_fence_file_text(fence_file_text("step-40")));
  EXPECT_EQ("", parse_fence_file_text(fence_file_text("")));
  EXPECT_FALSE(parse_fence_file_text("checkpoint=step-40"));  // torn: no newline
  EXPECT_FALSE(parse_fence_file_text("checkpoint=../x\n"));
  EXPECT_FALSE(parse_fence_file_text("other=1\n"));
}

CheckpointCandidate candidate(const std::string& name, std::time_t mtime, std::optional<CheckpointLabel> label) {
  CheckpointCandidate c;
  c.name = name;
  c.complete = true;
  c.marker_mtime = mtime;
  c.label = std::move(label);
  return c;
}

TEST(CheckpointFenceRule, ASupersededAttemptCountsOnlyWithTheCheckpointItsFenceNames) {
  CheckpointFences fences{{{"42", 1}, "step-40"}};
  EXPECT_FALSE(fenced_out(CheckpointLabel{"42", 1}, "step-40", fences));
  EXPECT_TRUE(fenced_out(CheckpointLabel{"42", 1}, "step-90", fences)) << "written after it was superseded";
  EXPECT_FALSE(fenced_out(CheckpointLabel{"42", 2}, "step-50", fences)) << "the current attempt";
  EXPECT_FALSE(fenced_out(CheckpointLabel{"7", 1}, "step-90", fences)) << "another job's";
  EXPECT_FALSE(fenced_out(std::nullopt, "step-90", fences)) << "unlabelled: cannot be told apart";
  EXPECT_TRUE(fenced_out(CheckpointLabel{"42", 1}, "step-40", {{{"42", 1}, ""}})) << "fenced with none";

  // The stale attempt's newer checkpoints lose to the older one its fence names, and to the
  // current attempt's.
  std::vector<CheckpointCandidate> c = {candidate("step-40-attempt-1", 100, CheckpointLabel{"42", 1}),
                                        candidate("step-90-attempt-1", 300, CheckpointLabel{"42", 1})};
  CheckpointFences f{{{"42", 1}, "step-40-attempt-1"}};
  EXPECT_EQ(0, pick_resume_checkpoint(c, f));
  EXPECT_EQ(1, pick_resume_checkpoint(c)) << "without the fence the stale one would win";
  c.push_back(candidate("step-50-attempt-2", 200, CheckpointLabel{"42", 2}));
  EXPECT_EQ(2, pick_resume_checkpoint(c, f));
}

class FenceDir : public ::testing::Test {
 protected:
  fs::path dir = fs::temp_directory_path() / ("safe-fence-" + std::to_string(getpid()));
  void SetUp() override {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  void checkpoint(const std::string& name, const std::string& marker_text, long mtime) {
    fs::create_directories(dir / name);
    std::ofstream(dir / name / "COMPLETE") << marker_text;
    struct timespec times[2] = {{mtime, 0}, {mtime, 0}};
    utimensat(AT_FDCWD, (dir / name / "COMPLETE").c_str(), times, 0);
  }
  std::string newest() { return fs::path(newest_complete_checkpoint(dir.string(), "COMPLETE", std::nullopt)->path).filename(); }
};

TEST_F(FenceDir, AFenceNamesTheAttemptsNewestAndLaterCheckpointsOfItAreIgnored) {
  checkpoint("step-10-attempt-1", "job=42 attempt=1\n", 1000);
  checkpoint("step-20-attempt-1", "job=42 attempt=1\n", 2000);
  checkpoint("step-5-attempt-1", "job=7 attempt=1\n", 3000);  // another job's, newest on disk
  auto fenced = fence_attempt(dir.string(), "COMPLETE", std::nullopt, {"42", 1});
  ASSERT_TRUE(fenced.ok()) << fenced.error();
  EXPECT_TRUE(fenced->created);
  EXPECT_EQ("step-20-attempt-1", fenced->checkpoint);
  std::ifstream text(dir / ".safe-fence" / "job-42.attempt-1");
  EXPECT_EQ("checkpoint=step-20-attempt-1\n", std::string(std::istreambuf_iterator<char>(text), {}));

  // The stale attempt goes on writing; the fence stands, and its checkpoint is never chosen.
  checkpoint("step-30-attempt-1", "job=42 attempt=1\n", 4000);
  auto again = fence_attempt(dir.string(), "COMPLETE", std::nullopt, {"42", 1});
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_FALSE(again->created);
  EXPECT_EQ("step-20-attempt-1", again->checkpoint);
  EXPECT_EQ("step-5-attempt-1", newest());
  checkpoint("step-25-attempt-2", "job=42 attempt=2\n", 5000);
  EXPECT_EQ("step-25-attempt-2", newest());
  checkpoint("step-40-attempt-1", "job=42 attempt=1\n", 6000);
  EXPECT_EQ("step-25-attempt-2", newest());
  for (const auto& e : fs::directory_iterator(dir / ".safe-fence"))
    EXPECT_EQ("job-42.attempt-1", e.path().filename()) << "no temporary file is left";
}

TEST_F(FenceDir, AnAttemptWithoutCheckpointsIsFencedWithNone) {
  auto fenced = fence_attempt(dir.string(), "COMPLETE", std::nullopt, {"42", 1});
  ASSERT_TRUE(fenced.ok()) << fenced.error();
  EXPECT_EQ("", fenced->checkpoint);
  checkpoint("step-10-attempt-1", "job=42 attempt=1\n", 1000);
  EXPECT_EQ("", newest());
  EXPECT_FALSE(fence_attempt(dir.string(), "COMPLETE", std::nullopt, {"4/2", 1}).ok());
}

TEST_F(FenceDir, OneScanFencesSeveralAttemptsAndAFenceWrittenSinceStands) {
  checkpoint("step-10-attempt-1", "job=42 attempt=1\n", 1000);
  checkpoint("step-20-attempt-2", "job=42 attempt=2\n", 2000);
  auto scan = scan_checkpoints(dir.string(), "COMPLETE", std::nullopt);
  ASSERT_TRUE(scan.ok()) << scan.error();
  // Another node's task fences attempt 2 after the scan, while attempt 2 had written on.
  checkpoint("step-30-attempt-2", "job=42 attempt=2\n", 3000);
  ASSERT_TRUE(fence_attempt(dir.string(), "COMPLETE", std::nullopt, {"42", 2}).ok());

  auto first = fence_attempt(dir.string(), std::nullopt, {"42", 1}, *scan);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_TRUE(first->created);
  EXPECT_EQ("step-10-attempt-1", first->checkpoint);
  auto second = fence_attempt(dir.string(), std::nullopt, {"42", 2}, *scan);
  ASSERT_TRUE(second.ok()) << second.error();
  EXPECT_FALSE(second->created);
  EXPECT_EQ("step-30-attempt-2", second->checkpoint) << "the first fence written stands, not the older scan's view";
}

TEST_F(FenceDir, ALinkInPlaceOfTheCheckpointDirectoryIsNotFollowed) {
  fs::create_directories(dir / "elsewhere");
  fs::create_directory_symlink(dir / "elsewhere", dir / "link");
  auto fenced = fence_attempt((dir / "link").string(), "COMPLETE", std::nullopt, {"42", 1});
  ASSERT_FALSE(fenced.ok());
  EXPECT_NE(std::string::npos, fenced.error().find("is not a directory")) << fenced.error();
  EXPECT_FALSE(fs::exists(dir / "elsewhere" / ".safe-fence"));
}

TEST_F(FenceDir, ARootCallerWritesTheFenceAsTheUserAndOthersFencesAreIgnored) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to own files as another user";
  const uid_t user = 65534;
  ASSERT_EQ(0, chown(dir.c_str(), user, user));
  checkpoint("step-10-attempt-1", "job=42 attempt=1\n", 1000);
  checkpoint("step-20-attempt-1", "job=42 attempt=1\n", 2000);
  for (const char* c : {"step-10-attempt-1", "step-20-attempt-1"}) {
    ASSERT_EQ(0, chown((dir / c).c_str(), user, user));
    ASSERT_EQ(0, lchown((dir / c / "COMPLETE").c_str(), user, user));
  }
  // A fence another user planted (root's here) must not deny this user's resume.
  fs::create_directories(dir / ".safe-fence");
  std::ofstream(dir / ".safe-fence" / "job-42.attempt-1") << "checkpoint=\n";
  EXPECT_EQ((dir / "step-20-attempt-1").string(), newest_complete_checkpoint(dir.string(), "COMPLETE", user)->path);
  EXPECT_FALSE(fence_attempt(dir.string(), "COMPLETE", user, {"42", 1}).ok()) << "the fence directory is not the user's";
  fs::remove_all(dir / ".safe-fence");

  auto fenced = fence_attempt(dir.string(), "COMPLETE", user, {"42", 1});
  ASSERT_TRUE(fenced.ok()) << fenced.error();
  EXPECT_EQ("step-20-attempt-1", fenced->checkpoint);
  struct stat st {};
  ASSERT_EQ(0, stat((dir / ".safe-fence" / "job-42.attempt-1").c_str(), &st));
  EXPECT_EQ(user, st.st_uid);
  ASSERT_EQ(0, stat((dir / ".safe-fence").c_str(), &st));
  EXPECT_EQ(user, st.st_uid);
  EXPECT_EQ(0u, geteuid()) << "the thread's ids are root's again";
  ASSERT_EQ(0, mkdir((dir / "root-made").c_str(), 0700));
  ASSERT_EQ(0, stat((dir / "root-made").c_str(), &st));
  EXPECT_EQ(0u, st.st_uid) << "file-system ids restored after the fence";
}

}  // namespace
}  // namespace safe
