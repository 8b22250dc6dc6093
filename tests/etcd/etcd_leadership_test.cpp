// safed's leadership and its store's journal against a real etcd (Debian's etcd-server, started
// here on free loopback ports in a directory of its own): the lease, its keep-alive and the
// campaign over etcd's JSON gateway, a killed leader replaced, a leader that loses etcd stopping
// before its lease ends, and journal entries fenced by the leadership's token.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "controller/safed/etcd_client.hpp"
#include "controller/safed/etcd_journal.hpp"
#include "controller/safed/leadership.hpp"
#include "tests/etcd/local_etcd.hpp"

namespace safe {
namespace {

long long steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class RealEtcdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(find_etcd().empty()) << "etcd not found: apt-get install etcd-server (./bootstrap.sh installs it)";
    ASSERT_TRUE(etcd.ready) << "etcd did not answer at " << etcd.url;
  }
  // Ticks both (or only `only`) every 100 ms until `done` or `ms` pass; false on time out. Never two
  // leaders at once.
  template <class Done>
  bool run_until(Done done, long long ms, Leadership* only = nullptr) {
    for (long long end = steady_ms() + ms; steady_ms() < end;) {
      long long now = steady_ms();
      if (!only || only == &a) a.tick(now);
      if (!only || only == &b) b.tick(now);
      now = steady_ms();
      EXPECT_FALSE(a.leading(now) && b.leading(now)) << "two leaders";
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  Etcd etcd;
  LeadershipPolicy policy{2, 500, 500};  // etcd's shortest TTL (2 s with its default election timeout)
  EtcdClient client_a{{{etcd.url}, 300}}, client_b{{{etcd.url}, 300}};
  Leadership a{client_a, "/safe/safed/leader", "http://a:8080 #1", policy};
  Leadership b{client_b, "/safe/safed/leader", "http://b:8080 #2", policy};
};

TEST_F(RealEtcdTest, OneLeadsTheOtherFollowsAndTakesOverWhenTheLeaderIsKilled) {
  ASSERT_TRUE(run_until([&] { return a.leading(steady_ms()) && b.holder() == "http://a:8080 #1"; }, 5000));
  long long first_token = a.token();
  EXPECT_GT(first_token, 0);
  // Kept alive well past its TTL.
  EXPECT_FALSE(run_until([&] { return !a.leading(steady_ms()); }, 3000));
  long long killed = steady_ms();
  ASSERT_TRUE(run_until([&] { return b.leading(steady_ms()); }, 10000, &b)) << "a no longer ticks";
  long long takeover = steady_ms() - killed;
  std::printf("takeover after the leader stopped: %lld ms (TTL %lld s)\n", takeover, policy.ttl_s);
  EXPECT_LE(takeover, policy.ttl_s * 1000 + 1500);
  EXPECT_GT(b.token(), first_token);
}

TEST_F(RealEtcdTest, ALeaderWhoseEtcdHangsStopsActingWithinItsTtl) {
  ASSERT_TRUE(run_until([&] { return a.leading(steady_ms()); }, 5000, &a));
  etcd.stop();
  long long hung = steady_ms();
  ASSERT_TRUE(run_until([&] { return !a.leading(steady_ms()); }, 10000, &a));
  long long stopped = steady_ms() - hung;
  etcd.resume();
  std::printf("the leader stopped acting %lld ms after etcd hung (TTL %lld s)\n", stopped, policy.ttl_s);
  EXPECT_LT(stopped, policy.ttl_s * 1000);
  // etcd back: someone leads again (etcd's own leases were frozen with it).
  EXPECT_TRUE(run_until([&] { return a.leading(steady_ms()) || b.leading(steady_ms()); }, 10000));
}

TEST_F(RealEtcdTest, TheJournalTakesEntriesOnlyFromTheLeaderOfTheMomentAndLargeOnesInParts) {
  EtcdJournal journal_a(client_a, "/safe", 1000), journal_b(client_b, "/safe", 1000);
  ASSERT_EQ(journal_a.leader_key(), "/safe/leader");
  Leadership la{client_a, journal_a.leader_key(), "a", policy}, lb{client_b, journal_b.leader_key(), "b", policy};
  la.tick(steady_ms());
  lb.tick(steady_ms());
  ASSERT_TRUE(la.leading(steady_ms()));
  EXPECT_FALSE(journal_a.append(1, "first")) << "no token set: not the active one";
  journal_a.set_token(la.token());
  ASSERT_TRUE(journal_a.append(1, "first"));
  std::string large(2500, 'x');
  large[0] = 'L';
  large[2499] = 'E';
  ASSERT_TRUE(journal_a.append(2, large)) << "in 3 parts";
  EXPECT_FALSE(journal_a.append(2, "again")) << "an entry is written once";
  auto entries = journal_b.entries_after(0, 10);
  ASSERT_TRUE(entries) << entries.error();
  ASSERT_EQ(2u, entries->size());
  EXPECT_EQ(1, (*entries)[0].seq);
  EXPECT_EQ("first", (*entries)[0].data);
  EXPECT_EQ(large, (*entries)[1].data);
  EXPECT_FALSE((*entries)[1].snapshot);
  EXPECT_EQ(1u, journal_b.entries_after(1, 10)->size());

  la.resign(steady_ms());  // b takes over; a's appends under its old token are fenced
  ASSERT_TRUE(run_until([&] {
    lb.tick(steady_ms());
    return lb.leading(steady_ms());
  }, 5000, &b));
  journal_b.set_token(lb.token());
  Status late = journal_a.append(3, std::string(2500, 'z'));  // its parts land, its entry is refused
  ASSERT_FALSE(late);
  EXPECT_NE(std::string::npos, late.error().find("fenced")) << late.error();
  ASSERT_TRUE(journal_b.append(3, std::string(2500, 'b')));
  entries = journal_a.entries_after(2, 10);
  ASSERT_TRUE(entries) << entries.error();
  ASSERT_EQ(1u, entries->size());
  EXPECT_EQ(std::string(2500, 'b'), (*entries)[0].data) << "the deposed writer's parts are not mixed in";
}

// A snapshot is an entry, fenced like the others, and drops every entry before it (and their
// parts): the journal then starts with it.
TEST_F(RealEtcdTest, ASnapshotStartsTheJournalAndDropsTheEntriesBeforeIt) {
  EtcdJournal journal_a(client_a, "/safe", 1000), journal_b(client_b, "/safe", 1000);
  Leadership la{client_a, journal_a.leader_key(), "a", policy}, lb{client_b, journal_b.leader_key(), "b", policy};
  la.tick(steady_ms());
  lb.tick(steady_ms());
  ASSERT_TRUE(la.leading(steady_ms()));
  journal_a.set_token(la.token());
  auto oldest = journal_b.oldest_seq();
  ASSERT_TRUE(oldest) << oldest.error();
  EXPECT_FALSE(oldest->has_value()) << "an empty journal";
  ASSERT_TRUE(journal_a.append(1, "one"));
  ASSERT_TRUE(journal_a.append(2, std::string(2500, 'p')));  // in parts
  ASSERT_TRUE(journal_a.append(3, "three"));
  std::string image(2200, 'i');
  image[2199] = 'E';
  ASSERT_TRUE(journal_a.append_snapshot(4, image));
  EXPECT_FALSE(journal_a.append_snapshot(4, image)) << "an entry is written once";
  ASSERT_TRUE(journal_a.append(5, "five"));
  EXPECT_EQ(4, journal_b.oldest_seq()->value_or(0));
  auto entries = journal_b.entries_after(0, 10);
  ASSERT_TRUE(entries) << entries.error();
  ASSERT_EQ(2u, entries->size()) << "entries 1 to 3 dropped";
  EXPECT_EQ(4, (*entries)[0].seq);
  EXPECT_TRUE((*entries)[0].snapshot);
  EXPECT_EQ(image, (*entries)[0].data);
  EXPECT_EQ("five", (*entries)[1].data);
  auto parts = client_b.list("/safe/journal-part/");
  ASSERT_TRUE(parts) << parts.error();
  for (const auto& [key, value] : *parts)
    EXPECT_EQ(0u, key.rfind("/safe/journal-part/00000000000000000004/", 0)) << key << ": entry 2's parts dropped";
  EXPECT_FALSE(parts->empty());

  la.resign(steady_ms());  // b takes over: a's late snapshot is fenced and drops nothing
  ASSERT_TRUE(run_until([&] {
    lb.tick(steady_ms());
    return lb.leading(steady_ms());
  }, 5000, &b));
  Status late = journal_a.append_snapshot(6, image);
  ASSERT_FALSE(late);
  EXPECT_NE(std::string::npos, late.error().find("fenced")) << late.error();
  EXPECT_EQ(4, journal_b.oldest_seq()->value_or(0));
}

}  // namespace
}  // namespace safe
