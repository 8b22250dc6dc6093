// The journal's priority prefixes and the plain log's timestamps (common/daemon_log), and how a
// daemon tells that its stderr is the journal's stream.
#include "common/daemon_log.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace safe {
namespace {

TEST(DaemonLog, TheJournalGetsThePriorityAndNoTimestamp) {
  EXPECT_EQ("<3>safed: reconcile pass failed\n", format_log_line(LogPriority::error, "safed: reconcile pass failed", true, 0));
  EXPECT_EQ("<4>w\n", format_log_line(LogPriority::warning, "w", true, 0));
  EXPECT_EQ("<5>n\n", format_log_line(LogPriority::notice, "n", true, 0));
  EXPECT_EQ("<6>i\n", format_log_line(LogPriority::info, "i", true, 0));
}

TEST(DaemonLog, ElsewhereALineStartsWithItsUtcTime) {
  // 2026-12-03T16:11:42Z
  EXPECT_EQ("2026-12-03T16:11:42 safed: started\n",
            format_log_line(LogPriority::error, "safed: started", false, 1796314302));
}

TEST(DaemonLog, ALineStaysOneLine) {
  // A message that carries a newline (an error text from elsewhere) must not start a journal
  // record without a priority, or a line that looks like one of ours.
  EXPECT_EQ("<4>a b c\n", format_log_line(LogPriority::warning, "a\nb\rc", true, 0));
}

TEST(DaemonLog, TheJournalStreamIsTheOneJournalStreamNames) {
  char path[] = "/tmp/safe-daemon-log-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);
  struct stat st {};
  ASSERT_EQ(0, fstat(fd, &st));
  std::string named = std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  EXPECT_TRUE(is_journal_stream(fd, named.c_str()));
  EXPECT_FALSE(is_journal_stream(fd, nullptr));
  EXPECT_FALSE(is_journal_stream(fd, (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino + 1)).c_str()));
  EXPECT_FALSE(is_journal_stream(fd, (named + "x").c_str()));
  EXPECT_FALSE(is_journal_stream(fd, "garbage"));
  // A child that inherited $JOURNAL_STREAM but writes its stderr elsewhere: not the journal.
  int other = open("/dev/null", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(other, 0);
  EXPECT_FALSE(is_journal_stream(other, named.c_str()));
  close(other);
  close(fd);
}

}  // namespace
}  // namespace safe
