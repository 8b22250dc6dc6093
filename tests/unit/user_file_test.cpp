// Reading files users control: only regular files of the expected owner, through the inode that
// was checked, never blocking and never more than asked for.
#include "common/user_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/checkpoint_scan.hpp"

namespace safe {
namespace {

class UserFileTest : public ::testing::Test {
 protected:
  UserFileTest() : dir(std::filesystem::temp_directory_path() / ("safe-user-file-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~UserFileTest() override { std::filesystem::remove_all(dir); }
  std::string path(const std::string& name) { return (dir / name).string(); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; }
  std::filesystem::path dir;
  uid_t me = geteuid();
};

TEST_F(UserFileTest, ReadsARegularFileOfItsOwner) {
  write("out", "0123456789");
  EXPECT_EQ("0123456789", *read_user_file(path("out"), me, 100));
  EXPECT_EQ("789", *read_user_file_tail(path("out"), me, 3));
  EXPECT_EQ(10, stat_user_file(path("out"), me)->size);
  auto too_big = read_user_file(path("out"), me, 5);
  EXPECT_FALSE(too_big.ok());
  EXPECT_NE(std::string::npos, too_big.error().find("larger than the 5 bytes")) << too_big.error();
}

TEST_F(UserFileTest, RefusesWhatIsNotTheUsersRegularFile) {
  write("out", "x");
  std::filesystem::create_symlink(dir / "out", dir / "link");
  ASSERT_EQ(0, mkfifo(path("fifo").c_str(), 0600));
  for (const std::string& p : {path("link"), path("fifo"), std::string("/dev/null"), path("missing"), dir.string()}) {
    EXPECT_FALSE(read_user_file(p, std::nullopt, 100).ok()) << p;
    EXPECT_FALSE(read_user_file_tail(p, std::nullopt, 100).ok()) << p;
    EXPECT_FALSE(stat_user_file(p, std::nullopt).ok()) << p;
  }
  auto others = read_user_file(path("out"), me + 1, 100);
  EXPECT_FALSE(others.ok());
  EXPECT_NE(std::string::npos, others.error().find("not by uid")) << others.error();
}

TEST_F(UserFileTest, CheckpointsOnlyOfTheJobsUser) {
  std::filesystem::create_directories(dir / "ckpt/step-1");
  std::ofstream(dir / "ckpt/step-1/COMPLETE") << "";
  auto mine = newest_complete_checkpoint(path("ckpt"), "COMPLETE", me);
  ASSERT_TRUE(mine.ok()) << mine.error();
  EXPECT_EQ(path("ckpt") + "/step-1", mine->path);
  auto not_mine = newest_complete_checkpoint(path("ckpt"), "COMPLETE", me + 1);
  EXPECT_FALSE(not_mine.ok()) << "a directory someone else owns is never resumed from";
  if (me != 0) return;
  // Root can give entries away: another user's checkpoint (or marker) inside the user's own
  // directory is skipped.
  std::filesystem::create_directories(dir / "ckpt/step-2");
  std::ofstream(dir / "ckpt/step-2/COMPLETE") << "";
  ASSERT_EQ(0, chown(path("ckpt/step-2").c_str(), 65534, 65534));
  std::filesystem::create_directories(dir / "ckpt/step-3");
  std::ofstream(dir / "ckpt/step-3/COMPLETE") << "";
  ASSERT_EQ(0, chown(path("ckpt/step-3/COMPLETE").c_str(), 65534, 65534));
  EXPECT_EQ(path("ckpt") + "/step-1", newest_complete_checkpoint(path("ckpt"), "COMPLETE", me)->path);
}

TEST_F(UserFileTest, ACheckpointDirectoryWithTooManyEntriesIsNotScanned) {
  std::filesystem::create_directories(dir / "ckpt");
  for (int i = 0; i < 20; ++i) std::ofstream(dir / "ckpt" / std::to_string(i)) << "";
  auto many = newest_complete_checkpoint(path("ckpt"), "COMPLETE", me, 10);
  EXPECT_FALSE(many.ok());
  EXPECT_NE(std::string::npos, many.error().find("more than 10 entries")) << many.error();
}

}  // namespace
}  // namespace safe
