// Where a user's Slurm workloads run, on a real directory tree: a base that others can write is
// refused at start; a user's directory is theirs alone, made as them in their home.
#include "kube-bridge/user_work_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace safe::bridge {
namespace {

constexpr uid_t kNobody = 65534;

class UserWorkDirTest : public ::testing::Test {
 protected:
  UserWorkDirTest() : dir(std::filesystem::temp_directory_path() / ("safe-work-dir-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir);
    chmod(dir.c_str(), 0755);
  }
  ~UserWorkDirTest() override { std::filesystem::remove_all(dir); }
  std::string path(const std::string& name) { return (dir / name).string(); }
  std::filesystem::path dir;
  UserRecord nobody{"nobody", kNobody, kNobody, {}, ""};
};

TEST_F(UserWorkDirTest, ABaseOthersCanWriteIsRefusedAtStart) {
  EXPECT_TRUE(check_work_dir_base("").ok()) << "users' homes";
  std::filesystem::create_directories(dir / "shared");
  chmod(path("shared").c_str(), 01777);
  auto shared = check_work_dir_base(path("shared"));
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(std::string::npos, shared.error().find("writable by its group or by others (mode 1777)")) << shared.error();
  EXPECT_NE(std::string::npos, shared.error().find("chmod 0755")) << shared.error();
  std::filesystem::create_directories(dir / "group");
  chmod(path("group").c_str(), 0775);
  EXPECT_FALSE(check_work_dir_base(path("group")).ok());
  std::filesystem::create_directories(dir / "good");
  chmod(path("good").c_str(), 0755);
  EXPECT_TRUE(check_work_dir_base(path("good")).ok());
  std::filesystem::create_directory_symlink(dir / "good", dir / "link");
  EXPECT_FALSE(check_work_dir_base(path("link")).ok()) << "a link could be pointed elsewhere later";
  EXPECT_FALSE(check_work_dir_base(path("missing")).ok());
}

TEST_F(UserWorkDirTest, UnderABaseEachUserGetsADirectoryOfTheirOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to give directories away";
  SystemUserWorkDirs dirs(dir.string(), std::chrono::seconds(5));
  auto made = dirs.prepare(nobody);
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_EQ(path("nobody"), *made);
  struct stat st {};
  ASSERT_EQ(0, lstat(made->c_str(), &st));
  EXPECT_EQ(kNobody, st.st_uid);
  EXPECT_EQ(0700u, st.st_mode & 07777);
  EXPECT_TRUE(dirs.prepare(nobody).ok()) << "again: the same directory";
  chmod(made->c_str(), 0777);
  EXPECT_FALSE(dirs.prepare(nobody).ok()) << "made writable by others since";
  UserRecord planted{"planted", kNobody, kNobody, {}, ""};
  std::filesystem::create_directory_symlink("/etc", dir / "planted");
  auto refused = dirs.prepare(planted);
  EXPECT_FALSE(refused.ok()) << "a link in the user's place is not followed";
  UserRecord other{"root", 0, 0, {}, ""};
  std::filesystem::create_directories(dir / "root");
  chown(path("root").c_str(), kNobody, kNobody);
  EXPECT_FALSE(dirs.prepare(other).ok()) << "a directory of another user's";
}

TEST_F(UserWorkDirTest, WithoutABaseTheUserMakesItInTheirHomeAsThemselves) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  std::filesystem::create_directories(dir / "home");
  chown(path("home").c_str(), kNobody, kNobody);
  nobody.home = path("home");
  SystemUserWorkDirs dirs("", std::chrono::seconds(5));
  auto made = dirs.prepare(nobody);
  ASSERT_TRUE(made.ok()) << made.error();
  EXPECT_EQ(path("home/safe-bridge"), *made);
  struct stat st {};
  ASSERT_EQ(0, lstat(made->c_str(), &st));
  EXPECT_EQ(kNobody, st.st_uid) << "made by the user, not by root";
  // A home the user cannot write (root's): root does not step in.
  std::filesystem::create_directories(dir / "roots-home");
  nobody.home = path("roots-home");
  auto refused = dirs.prepare(nobody);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(std::string::npos, refused.error().find("Permission denied")) << refused.error();
  EXPECT_FALSE(std::filesystem::exists(dir / "roots-home" / "safe-bridge"));
  nobody.home = "";
  EXPECT_FALSE(dirs.prepare(nobody).ok()) << "no home in the user database";
}

}  // namespace
}  // namespace safe::bridge
