// DeadlineReader: answers come from workers; a read that blocks past its deadline is answered
// "timed out", its worker replaced, and the key is not read again until the stuck read returns.
#include "controller/safed/deadline_reader.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace safe {
namespace {

// A gate a read can block on, as on a hung NFS server, until the test opens it.
struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock l(m);
    cv.wait(l, [&] { return open; });
  }
  void release() {
    std::lock_guard l(m);
    open = true;
    cv.notify_all();
  }
};

class DeadlineReaderTest : public ::testing::Test {
 protected:
  std::atomic<long long> clock{1000};
  DeadlineReader reader{{2, std::chrono::milliseconds(100), 3}, [this] { return clock.load(); }};

  std::optional<DeadlineReader::Answer> ask(const std::string& key, const DeadlineReader::Read& read,
                                            long long since = 1000) {
    for (int i = 0; i < 200; ++i) {
      auto got = reader.get(key, since, since, read, true);
      if (got) return got;
      reader.wait_for_urgent(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }
};

TEST_F(DeadlineReaderTest, AnswersFromAWorker) {
  auto got = ask("a", [] { return std::any(42); });
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->timed_out);
  EXPECT_EQ(42, std::any_cast<int>(got->value));
  EXPECT_EQ(1000, got->started);
}

TEST_F(DeadlineReaderTest, AnAnswerOlderThanAskedForIsNotGiven) {
  ASSERT_TRUE(ask("a", [] { return std::any(1); }));
  clock = 1010;
  EXPECT_FALSE(reader.get("a", 1010, 1010, [] { return std::any(2); }, true)) << "the answer from 1000 is stale";
  auto fresh = ask("a", [] { return std::any(2); }, 1010);
  ASSERT_TRUE(fresh.has_value());
  EXPECT_EQ(2, std::any_cast<int>(fresh->value));
}

TEST_F(DeadlineReaderTest, AReadPastItsDeadlineIsUnknownAndDoesNotHoldOthers) {
  auto gate = std::make_shared<Gate>();
  std::atomic<int> calls{0};
  auto blocked = [gate, &calls] {
    ++calls;
    gate->wait();
    return std::any(std::string("late"));
  };
  auto first = ask("hung", blocked);
  ASSERT_TRUE(first.has_value());
  EXPECT_TRUE(first->timed_out);
  EXPECT_EQ(1, reader.stats().stuck);
  // Other reads still go on: the stuck worker was replaced.
  for (int i = 0; i < 5; ++i) {
    auto other = ask("other" + std::to_string(i), [i] { return std::any(i); });
    ASSERT_TRUE(other.has_value());
    EXPECT_FALSE(other->timed_out);
  }
  // The hung key is not read again while its read is stuck.
  for (int i = 0; i < 5; ++i) (void)reader.get("hung", 0, 1 << 30, blocked, false);
  EXPECT_EQ(1, calls.load());
  gate->release();
  std::optional<DeadlineReader::Answer> late;
  for (int i = 0; i < 100 && !(late && !late->timed_out); ++i) {
    late = reader.get("hung", 0, 0, blocked, false);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(late.has_value());
  EXPECT_FALSE(late->timed_out) << "the stuck read's answer arrives when it returns";
  EXPECT_EQ("late", std::any_cast<std::string>(late->value));
  EXPECT_EQ(0, reader.stats().stuck);
}

TEST_F(DeadlineReaderTest, StuckWorkersAreCappedAndLaterReadsStillAnswerInTime) {
  auto gate = std::make_shared<Gate>();
  std::atomic<int> calls{0};
  auto blocked = [gate, &calls] {
    ++calls;
    gate->wait();
    return std::any();
  };
  // 2 workers, and up to 3 more in place of stuck ones: 5 reads can hang, each answered "timed out".
  for (int i = 0; i < 5; ++i) {
    auto got = ask("hung" + std::to_string(i), blocked);
    ASSERT_TRUE(got.has_value()) << i;
    EXPECT_TRUE(got->timed_out);
  }
  EXPECT_EQ(5, reader.stats().workers);
  EXPECT_EQ(5, calls.load());
  // Past the cap no worker is left to start a read, and no thread is added; but a read asked for
  // now (as of a job on a healthy file system) is still answered, "timed out", one deadline later:
  // the caller never waits forever (urgent reads included) while a hung mount holds every worker.
  for (int i = 0; i < 3; ++i) {
    auto waiting = ask("later" + std::to_string(i), [] { return std::any(7); });
    ASSERT_TRUE(waiting.has_value()) << i;
    EXPECT_TRUE(waiting->timed_out);
  }
  EXPECT_EQ(5, calls.load()) << "no worker was free to read them";
  EXPECT_EQ(5, reader.stats().workers);
  gate->release();
  std::optional<DeadlineReader::Answer> after;
  // Asked for as before (no fresher answer wanted): a read that timed out in the queue is read again.
  for (int i = 0; i < 100 && !(after && !after->timed_out); ++i) {
    after = reader.get("later0", 1000, 1000, [] { return std::any(7); }, false);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(after.has_value());
  EXPECT_FALSE(after->timed_out) << "once the hung reads return, reading goes on";
  EXPECT_EQ(7, std::any_cast<int>(after->value));
}

TEST(DeadlineReaderLoad, ReadsQueuedBehindBusyWorkersAreWaitedFor) {
  // One worker, no replacement, five reads of 150 ms under a 500 ms deadline: the last waits
  // ~600 ms in the queue, past the deadline, but the worker is busy, not stuck: it is read.
  DeadlineReader reader({1, std::chrono::milliseconds(500), 0}, [] { return 1000LL; });
  auto slow = [](int i) {
    return [i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(150));
      return std::any(i);
    };
  };
  constexpr int kReads = 5;
  std::vector<std::optional<DeadlineReader::Answer>> got(kReads);
  for (int round = 0; round < 300; ++round) {
    bool all = true;
    for (int i = 0; i < kReads; ++i) {
      if (!got[i]) got[i] = reader.get("k" + std::to_string(i), 1000, 1000, slow(i), true);
      all = all && got[i];
    }
    if (all) break;
    reader.wait_for_urgent(std::chrono::milliseconds(20));
  }
  for (int i = 0; i < kReads; ++i) {
    ASSERT_TRUE(got[i]) << i;
    EXPECT_FALSE(got[i]->timed_out) << "read " << i << " was answered 'timed out' though no worker was stuck";
    if (!got[i]->timed_out) {
      EXPECT_EQ(i, std::any_cast<int>(got[i]->value));
    }
  }
}

TEST_F(DeadlineReaderTest, AThrowingReadAnswersNothing) {
  auto got = ask("bad", []() -> std::any { throw std::runtime_error("x"); });
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->value.has_value());
}

// A clock step makes every answer's time meaningless: after one back, an answer from before it
// would pass for fresh for an hour. drop_answers forgets them, and one a read under way brings
// back too (it may have started on the old clock).
TEST_F(DeadlineReaderTest, AfterAClockStepNoEarlierAnswerIsGiven) {
  ASSERT_TRUE(ask("settled", [] { return std::any(1); }));
  auto gate = std::make_shared<Gate>();
  std::atomic<bool> started{false};
  reader.get("under way", 1000, 1000, [gate, &started] {
    started = true;
    gate->wait();
    return std::any(2);
  }, false);
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  clock = 1000 - 3600;
  reader.drop_answers();
  EXPECT_FALSE(reader.get("settled", -2600, -2600, [] { return std::any(3); }, false).has_value())
      << "the answer from before the step is gone; a new read is queued";
  gate->release();
  auto fresh = ask("settled", [] { return std::any(3); }, -2600);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(3, std::any_cast<int>(fresh->value));
  auto again = ask("under way", [] { return std::any(4); }, -2600);
  ASSERT_TRUE(again);
  EXPECT_EQ(4, std::any_cast<int>(again->value)) << "the read under way at the step was dropped and read again";
}

}  // namespace
}  // namespace safe
