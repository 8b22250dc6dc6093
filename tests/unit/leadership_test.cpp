// safed's leadership against an etcd double with a clock of its own (the lease TTLs run on it),
// and the etcd gateway's answers as etcd 3.4 writes them. The real etcd: tests/etcd/.
#include "controller/safed/leadership.hpp"

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "controller/safed/etcd_client.hpp"
#include "controller/safed/fenced_slurm_actions.hpp"
#include "tests/unit/fake_slurm.hpp"

namespace safe {
namespace {

// etcd's lease and key semantics, on the test's clock: a lease ends ttl after its last renewal,
// and takes its keys with it.
class FakeEtcd : public LeaseStore {
 public:
  long long now_ms = 0;
  bool reachable = true;

  Result<long long> grant(long long ttl_s) override {
    if (!reachable) return Error{"connection refused"};
    expire();
    leases_[++next_lease_] = {ttl_s, now_ms + ttl_s * 1000};
    return next_lease_;
  }
  Result<long long> keep_alive(long long lease) override {
    if (!reachable) return Error{"connection refused"};
    expire();
    auto it = leases_.find(lease);
    if (it == leases_.end()) return 0LL;
    it->second.expires_ms = now_ms + it->second.ttl_s * 1000;
    return it->second.ttl_s;
  }
  Status revoke(long long lease) override {
    if (!reachable) return Error{"connection refused"};
    drop(lease);
    return ok_status();
  }
  Result<LeaderKey> create_if_absent(const std::string& key, const std::string& value, long long lease) override {
    if (!reachable) return Error{"connection refused"};
    expire();
    auto it = keys_.find(key);
    if (it != keys_.end()) return it->second;
    if (!leases_.count(lease)) return Error{"etcdserver: requested lease not found"};
    return keys_[key] = {value, ++revision_, lease};
  }
  Status put(const std::string& key, const std::string& value, long long lease) override {
    if (!reachable) return Error{"connection refused"};
    expire();
    if (!leases_.count(lease)) return Error{"etcdserver: requested lease not found"};
    auto& k = keys_[key];
    if (!k.token) k.token = ++revision_;
    k.holder = value;
    k.lease = lease;
    return ok_status();
  }
  void del(const std::string& key) { keys_.erase(key); }
  std::optional<std::string> value(const std::string& key) {
    expire();
    auto it = keys_.find(key);
    if (it == keys_.end()) return std::nullopt;
    return it->second.holder;
  }

 private:
  struct Lease {
    long long ttl_s, expires_ms;
  };
  void expire() {
    for (auto it = leases_.begin(); it != leases_.end();) {
      if (it->second.expires_ms > now_ms) {
        ++it;
        continue;
      }
      long long id = it->first;
      ++it;
      drop(id);
    }
  }
  void drop(long long lease) {
    leases_.erase(lease);
    for (auto it = keys_.begin(); it != keys_.end();) it = it->second.lease == lease ? keys_.erase(it) : std::next(it);
  }
  std::map<long long, Lease> leases_;
  std::map<std::string, LeaderKey> keys_;
  long long next_lease_ = 100, revision_ = 1;
};

constexpr const char* kKey = "/safe/safed/leader";

class LeadershipTest : public ::testing::Test {
 protected:
  FakeEtcd etcd;
  LeadershipPolicy policy;  // TTL 3 s, renewed every second, 0.5 s margin
  Leadership a{etcd, kKey, "http://a:8080 #1", policy};
  Leadership b{etcd, kKey, "http://b:8080 #2", policy};
  long long now = 0;

  // Both instances tick every 100 ms for `ms`, on one clock with etcd (`only` ticks one).
  void run(long long ms, Leadership* only = nullptr) {
    for (long long end = now + ms; now < end;) {
      now += 100;
      etcd.now_ms = now;
      if (!only || only == &a) a.tick(now);
      if (!only || only == &b) b.tick(now);
      ASSERT_FALSE(a.leading(now) && b.leading(now)) << "two leaders at " << now << " ms";
    }
  }
};

TEST_F(LeadershipTest, TheFirstToCampaignLeadsAndTheOtherSeesIt) {
  run(100);
  EXPECT_TRUE(a.leading(now));
  EXPECT_FALSE(b.leading(now));
  EXPECT_EQ(2, a.token());
  EXPECT_EQ(0, b.token());
  EXPECT_EQ("http://a:8080 #1", b.holder());
  run(10000);
  EXPECT_TRUE(a.leading(now)) << "kept alive";
  EXPECT_EQ(2, a.token());
}

TEST_F(LeadershipTest, AKilledLeadersLeaseRunsOutAndTheStandbyTakesOverWithANewToken) {
  run(100);
  ASSERT_TRUE(a.leading(now));
  long long killed = now;
  long long took_over = 0;
  while (!took_over && now < killed + 10000) {
    run(100, &b);  // a no longer ticks: killed
    if (b.leading(now)) took_over = now;
  }
  ASSERT_NE(0, took_over);
  EXPECT_LE(took_over - killed, policy.ttl_s * 1000 + policy.renew_interval_ms);
  EXPECT_EQ(3, b.token()) << "a new fencing token";
  EXPECT_FALSE(a.leading(now)) << "its own deadline passed before";
}

TEST_F(LeadershipTest, ALeaderCutOffFromEtcdStopsBeforeItsLeaseExpiresThere) {
  run(100);
  ASSERT_TRUE(a.leading(now));
  etcd.reachable = false;
  long long cut = now;
  while (a.leading(now)) run(100, &a);
  long long stopped = now;
  // The last renewal etcd saw was at most 100 ms before the cut, so etcd's lease ends no earlier
  // than cut - 100 + TTL; the leader stopped margin_ms before that.
  EXPECT_LE(stopped, cut - 100 + policy.ttl_s * 1000 - policy.margin_ms + 100);
  auto log = a.take_log();
  ASSERT_FALSE(log.empty());
  EXPECT_NE(std::string::npos, log.back().text.find("no longer active: its lease ran out unanswered"));
  EXPECT_EQ(LogPriority::warning, log.back().priority);
  etcd.reachable = true;
  run(5000);
  EXPECT_TRUE(a.leading(now) != b.leading(now)) << "one of them leads again";
}

TEST_F(LeadershipTest, ResigningHandsTheKeyToTheStandby) {
  run(100);
  ASSERT_TRUE(a.leading(now));
  a.resign(now);
  EXPECT_FALSE(a.leading(now));
  run(policy.renew_interval_ms + 100);
  EXPECT_TRUE(b.leading(now)) << "within one campaign interval";
  EXPECT_FALSE(a.leading(now)) << "and the one that resigned does not take it back";
}

TEST_F(LeadershipTest, EtcdErrorsAreLoggedOnceAndRecoveryOnce) {
  run(100);
  etcd.reachable = false;
  run(5000);
  auto log = b.take_log();
  int errors = 0;
  for (const auto& line : log) {
    if (line.text.find("safed: etcd: ") != 0) continue;
    ++errors;
    EXPECT_EQ(LogPriority::warning, line.priority);
  }
  EXPECT_EQ(1, errors);
  etcd.reachable = true;
  run(1000);
  log = b.take_log();
  ASSERT_FALSE(log.empty());
  EXPECT_EQ("safed: etcd answers again", log.front().text);
  EXPECT_EQ(LogPriority::notice, log.front().priority);
}

TEST_F(LeadershipTest, AKeyDeletedAndCreatedAgainIsANewLeadership) {
  run(100);
  ASSERT_EQ(2, a.token());
  etcd.del(kKey);
  run(1000, &a);
  EXPECT_TRUE(a.leading(now));
  EXPECT_EQ(3, a.token()) << "writes fenced by the old token must fail";
}

TEST_F(LeadershipTest, AnAnnouncementLivesWithItsInstancesLeaseAndFollowsItsValue) {
  b.announce("/safe/members/b", "slurm reachable");
  run(100);
  EXPECT_EQ("slurm reachable", etcd.value("/safe/members/b"));
  b.announce("/safe/members/b", "slurm unreachable");
  run(1000);
  EXPECT_EQ("slurm unreachable", etcd.value("/safe/members/b"));
  run(5000, &a);  // b gone: its lease ends, and its announcement with it
  EXPECT_FALSE(etcd.value("/safe/members/b").has_value());
}

TEST(FencedSlurmActions, NothingReachesSlurmOnceTheRoleIsGone) {
  testing::FakeSlurm slurm;
  slurm.nodes.push_back(SlurmNode{});
  slurm.nodes.back().name = "n1";
  bool active = true;
  FencedSlurmActions actions(slurm, [&] { return active; });
  EXPECT_TRUE(actions.drain_node("n1", "SaFE-quarantine: x"));
  active = false;
  Status refused = actions.down_node("n1", "SaFE-unreachable: x");
  ASSERT_FALSE(refused);
  EXPECT_NE(std::string::npos, refused.error().find("no longer the active one"));
  EXPECT_FALSE(actions.requeue(7));
  EXPECT_EQ(1, slurm.count("drain n1"));
  EXPECT_EQ(0, slurm.count("down n1"));
  EXPECT_EQ(0, slurm.count("requeue"));
}

TEST(EtcdGateway, ParsesGrantKeepAliveAndTheCampaignAsEtcd34AnswersThem) {
  // Captured from etcd 3.4.23's JSON gateway.
  EXPECT_EQ(7587899319812666117LL,
            *parse_lease_grant(R"({"header":{"cluster_id":"14841639068965178418","member_id":"1","revision":"1",)"
                               R"("raft_term":"2"},"ID":"7587899319812666117","TTL":"2"})"));
  EXPECT_EQ(2, *parse_keep_alive(R"({"result":{"header":{"revision":"1"},"ID":"7587899319812666117","TTL":"2"}})"));
  EXPECT_EQ(0, *parse_keep_alive(R"({"result":{"header":{"revision":"1"},"ID":"7587899319812666117"}})"))
      << "an expired lease: TTL absent";
  auto ours = parse_create_if_absent(
      R"({"header":{"revision":"2"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"2"}}}]})",
      "me", 42);
  ASSERT_TRUE(ours);
  EXPECT_EQ(2, ours->token);
  EXPECT_EQ(42, ours->lease);
  auto theirs = parse_create_if_absent(
      R"({"header":{"revision":"2"},"responses":[{"response_range":{"header":{"revision":"2"},"kvs":[{"key":)"
      R"("L3NhZmUvbGVhZGVy","create_revision":"2","mod_revision":"2","version":"1","value":"YQ==","lease":"77"}],)"
      R"("count":"1"}}]})",
      "me", 42);
  ASSERT_TRUE(theirs);
  EXPECT_EQ("a", theirs->holder);
  EXPECT_EQ(2, theirs->token);
  EXPECT_EQ(77, theirs->lease);
  EXPECT_FALSE(parse_lease_grant(R"({"error":"etcdserver: too many requests","code":14})"));
  EXPECT_FALSE(parse_keep_alive("<html>"));
}

}  // namespace
}  // namespace safe
