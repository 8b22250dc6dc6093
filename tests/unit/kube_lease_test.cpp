// Leader election with a coordination.k8s.io/v1 Lease (kube-bridge/kube_lease): two bridge
// instances against one in-memory Lease that refuses stale writes as the API server does.
#include <gtest/gtest.h>

#include "kube-bridge/kube_lease.hpp"

namespace safe::bridge {
namespace {

using namespace std::chrono_literals;
using Steady = LeaseElector::Steady;

// The Lease as the API server keeps it: a write must name the current resourceVersion.
struct LeaseServer {
  bool exists = false;
  LeaseRecord stored;
  int rv = 100;
  int writes = 0;
};

class FakeLeaseApi : public LeaseApi {
 public:
  FakeLeaseApi(LeaseServer& s, Steady& clock) : s_(s), clock_(clock) {}
  bool reachable = true;  // false: every request fails as over a cut network
  // How long a GET takes: the server answers with the Lease as it is when the GET arrives, at
  // the start of that time.
  std::chrono::milliseconds get_latency{0};
  Answer get() override {
    if (!reachable) return {Answer::failed, {}, "connection timed out"};
    Answer a = s_.exists ? Answer{Answer::ok, s_.stored, ""} : Answer{Answer::absent, {}, ""};
    clock_ += get_latency;
    return a;
  }
  Answer create(const LeaseRecord& r) override {
    if (!reachable) return {Answer::failed, {}, "connection timed out"};
    if (s_.exists) return {Answer::conflict, {}, ""};
    return write(r);
  }
  Answer update(const LeaseRecord& r) override {
    if (!reachable) return {Answer::failed, {}, "connection timed out"};
    if (!s_.exists) return {Answer::absent, {}, ""};
    if (r.resource_version != s_.stored.resource_version) return {Answer::conflict, {}, ""};
    return write(r);
  }

 private:
  Answer write(LeaseRecord r) {
    r.resource_version = std::to_string(++s_.rv);
    s_.stored = r;
    s_.exists = true;
    ++s_.writes;
    return {Answer::ok, r, ""};
  }
  LeaseServer& s_;
  Steady& clock_;
};

const LeaseTiming kTiming{15s, 10s, 2s};
std::string wall() { return "2026-12-03T10:00:00.000000Z"; }

// Two bridges, one clock: each tick sets `now` first (a GET with latency moves it on).
struct Pair {
  LeaseServer server;
  Steady now{};
  FakeLeaseApi api_a{server, now}, api_b{server, now};
  LeaseElector a{api_a, "bridge-a", kTiming, [this] { return now; }, wall};
  LeaseElector b{api_b, "bridge-b", kTiming, [this] { return now; }, wall};
  bool tick_a(Steady at) {
    now = at;
    return a.tick();
  }
  bool tick_b(Steady at) {
    now = at;
    return b.tick();
  }
  // a takes the Lease at 1 s and b sees it there; returns that time.
  Steady a_leads() {
    Steady t = Steady{} + 1s;
    EXPECT_TRUE(tick_a(t));
    EXPECT_FALSE(tick_b(t));
    return t;
  }
};

TEST(KubeLease, TheFirstCandidateCreatesTheLeaseAndTheOtherStandsBy) {
  Pair p;
  Steady t = p.a_leads();
  EXPECT_EQ("bridge-a", p.b.holder());
  EXPECT_EQ("bridge-a", p.server.stored.holder);
  EXPECT_EQ(15, p.server.stored.duration_s);
  // Renewals keep it; the candidate keeps waiting as long as the record changes.
  for (int i = 0; i < 20; ++i) {
    t += 2s;
    EXPECT_TRUE(p.tick_a(t));
    EXPECT_FALSE(p.tick_b(t));
  }
  EXPECT_TRUE(p.a.leading(t));
  EXPECT_FALSE(p.b.leading(t));
}

TEST(KubeLease, AKilledLeadersLeaseIsTakenOverAfterALeaseDurationWithoutChange) {
  Pair p;
  Steady t = p.a_leads();
  // a is killed: no more renewals.
  for (auto waited = 2s; waited < 15s; waited += 2s) EXPECT_FALSE(p.tick_b(t + waited)) << waited.count();
  EXPECT_TRUE(p.tick_b(t + 15s));
  EXPECT_EQ("bridge-b", p.server.stored.holder);
  EXPECT_EQ(1, p.server.stored.transitions);
}

TEST(KubeLease, ALeaderCutOffFromTheApiServerStopsBeforeTheCandidateTakesOver) {
  Pair p;
  Steady t = p.a_leads();
  p.api_a.reachable = false;
  Steady a_stopped{}, b_took_over{};
  for (Steady now = t + 1s; now < t + 60s; now += 1s) {
    bool a_leads = p.tick_a(now);
    bool b_leads = p.tick_b(now);
    if (!a_leads && a_stopped == Steady{}) a_stopped = now;
    if (b_leads && b_took_over == Steady{}) b_took_over = now;
    EXPECT_FALSE(a_leads && b_leads) << "two leaders at +" << (now - t).count();
  }
  EXPECT_EQ(t + 10s, a_stopped);     // the renew deadline
  EXPECT_EQ(t + 15s, b_took_over);   // the lease duration
  EXPECT_EQ("connection timed out", p.a.last_error());
  // Back on the network, a finds b holding the Lease and stands by.
  p.api_a.reachable = true;
  EXPECT_FALSE(p.tick_a(t + 61s));
  EXPECT_EQ("bridge-b", p.a.holder());
}

TEST(KubeLease, OfTwoWritesFromOneReadTheSecondIsRefused) {
  Pair p;
  Steady t = p.a_leads();
  // A candidate that read the Lease before a's renewal writes with the old resourceVersion.
  LeaseRecord stale = p.server.stored;
  ASSERT_TRUE(p.tick_a(t + 2s));
  stale.holder = "bridge-b";
  EXPECT_EQ(LeaseApi::Answer::conflict, p.api_b.update(stale).kind);
  EXPECT_EQ("bridge-a", p.server.stored.holder);
}

TEST(KubeLease, ALeaderThatLosesAWriteRaceStopsLeadingAtOnce) {
  Pair p;
  Steady t = p.a_leads();
  // Someone else wrote the Lease (an administrator, or a candidate that judged it expired).
  LeaseRecord other = p.server.stored;
  other.holder = "bridge-b";
  ASSERT_EQ(LeaseApi::Answer::ok, p.api_b.update(other).kind);
  EXPECT_FALSE(p.tick_a(t + 2s));
  EXPECT_FALSE(p.a.leading(t + 2s));
}

TEST(KubeLease, AReleasedLeaseIsTakenAtTheNextTry) {
  Pair p;
  Steady t = p.a_leads();
  p.a.release();
  EXPECT_FALSE(p.a.leading(t));
  EXPECT_EQ("", p.server.stored.holder);
  EXPECT_TRUE(p.tick_b(t + 2s));
  EXPECT_FALSE(p.tick_a(t + 2s));
}

TEST(KubeLease, AnUnreachableServerAtStartLeavesNobodyLeading) {
  Pair p;
  p.api_a.reachable = false;
  Steady t{};
  t += 1s;
  EXPECT_FALSE(p.tick_a(t));
  EXPECT_FALSE(p.server.exists);
}

TEST(KubeLease, ASlowReadIsDatedWhenItsAnswerCameNotWhenItWasSent) {
  Pair p;
  Steady t = p.a_leads();
  // b's GET takes 6 s and shows a's renewal made at +5.5 s, just before it reached the server.
  ASSERT_TRUE(p.tick_a(t + 5500ms));
  p.api_b.get_latency = 6s;
  ASSERT_FALSE(p.tick_b(t + 5s));  // answered at +11 s
  p.api_b.get_latency = 0ms;
  // a, killed now, leads until +15.5 s (its renew deadline: +5.5 s + 10 s). b may take over only
  // a lease duration after it saw the change, at +26 s, never while a leads.
  for (Steady at = t + 12s; at < t + 26s; at += 1s) EXPECT_FALSE(p.tick_b(at)) << (at - t).count();
  EXPECT_TRUE(p.tick_b(t + 26s));
}

TEST(KubeLease, ALeadThatLapsedStartsANewTermEvenWithTheLeaseStillInItsName) {
  Pair p;
  Steady t = p.a_leads();
  const long first = p.a.term();
  EXPECT_EQ(1, first);
  ASSERT_TRUE(p.tick_a(t + 2s));
  EXPECT_EQ(first, p.a.term());  // a renewal continues the term
  // a's thread stalls past its renew deadline; nobody took the Lease meanwhile.
  EXPECT_FALSE(p.a.leading(t + 13s));
  EXPECT_TRUE(p.tick_a(t + 13s));
  EXPECT_EQ(first + 1, p.a.term());  // what it knew before the lapse is stale
  // Taken over by b and given back: a new term again.
  p.a.release();
  ASSERT_TRUE(p.tick_b(t + 14s));
  p.b.release();
  ASSERT_TRUE(p.tick_a(t + 15s));
  EXPECT_EQ(first + 2, p.a.term());
}

TEST(KubeLease, TheLeaseObjectRoundTripsThroughItsJson) {
  LeaseRecord r = parse_lease(
      R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"safe-kube-bridge","resourceVersion":"42"},
          "spec":{"holderIdentity":"h1_77","leaseDurationSeconds":15,"acquireTime":"2026-12-03T10:00:00.000000Z",
                  "renewTime":"2026-12-03T10:00:02.000000Z","leaseTransitions":3}})");
  EXPECT_EQ("h1_77", r.holder);
  EXPECT_EQ(15, r.duration_s);
  EXPECT_EQ(3, r.transitions);
  EXPECT_EQ("42", r.resource_version);
  EXPECT_EQ("2026-12-03T10:00:02.000000Z", r.renew_time);
  EXPECT_EQ("", parse_lease(R"({"metadata":{"resourceVersion":"7"},"spec":{"holderIdentity":null}})").holder);
  EXPECT_EQ(27u, kube_micro_time_now().size());
}

}  // namespace
}  // namespace safe::bridge
