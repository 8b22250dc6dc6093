// The bridge's authentication: Slurm-style HS256 JWTs and munge credentials, through fakes.
#include <gtest/gtest.h>

#include <map>

#include "common/authenticator.hpp"
#include "common/base64.hpp"
#include "tests/unit/fake_user_directory.hpp"
#include "tests/unit/slurm_jwt_maker.hpp"

namespace safe::bridge {
namespace {

using safe::testing::b64url;
using safe::testing::make_token;

const std::string kKey(32, 'k');
constexpr std::time_t kNow = 1'800'000'000;

class FakeUsers : public FakeUserDirectory {
 public:
  FakeUsers() : FakeUserDirectory({{"alice", {"alice", 1001, 1001, {"ml"}, "/home/alice"}}, {"root", {"root", 0, 0, {}, "/root"}}}) {}
};

class FakeMunge : public MungeDecoder {
 public:
  Result decode(const std::string& c) override {
    if (c == "MUNGE:alice") return {1001, ""};
    if (c == "MUNGE:root") return {0, ""};
    if (c == "MUNGE:ghost") return {4242, ""};
    if (c == "MUNGE:root+grid") return {0, "", R"({"node":"n1"})"};  // a health checker's GPU grid
    return {std::nullopt, "Invalid credential format"};
  }
};

TEST(SlurmJwt, AcceptsATokenLikeScontrolToken) {
  auto check = verify_slurm_jwt(make_token(kKey, R"({"exp":1800000600,"iat":1800000000,"sun":"alice"})"), kKey, kNow);
  EXPECT_EQ(check.user, "alice") << check.error;
}

struct BadToken {
  std::string token;
  const char* why;
};

TEST(SlurmJwt, RejectsBadTokens) {
  const std::string ok = R"({"exp":1800000600,"iat":1800000000,"sun":"alice"})";
  std::string good = make_token(kKey, ok);
  std::string tampered = good;
  tampered[tampered.find('.') + 3] ^= 1;
  const BadToken cases[] = {
      {make_token(kKey, R"({"exp":1799999999,"sun":"alice"})"), "expired"},
      {make_token(kKey, R"({"sun":"alice"})"), "no exp"},
      {make_token(kKey, R"({"exp":1800000600})"), "no sun"},
      {make_token(std::string(32, 'x'), ok), "signature"},
      {make_token(kKey, ok, R"({"alg":"none"})"), "only HS256"},
      {make_token(kKey, ok, R"({"alg":"HS512"})"), "only HS256"},
      {b64url(R"({"alg":"none"})") + "." + b64url(ok) + ".", "only HS256"},
      {tampered, "signature"},
      {"abc", "three dot-separated"},
      {"a.b.c.d", "three dot-separated"},
      {"a*.b.c", "base64url"},
      {"", "three dot-separated"},
  };
  for (const auto& c : cases) {
    auto check = verify_slurm_jwt(c.token, kKey, kNow);
    EXPECT_FALSE(check.user) << c.token;
    EXPECT_NE(check.error.find(c.why), std::string::npos) << c.token << ": " << check.error;
  }
}

TEST(Authenticator, BearerAndMungeNameUsers) {
  FakeUsers users;
  FakeMunge munge;
  Authenticator auth({kKey, true, {"root"}}, &munge, &users, [] { return kNow; });
  auto jwt = auth.authenticate("Bearer " + make_token(kKey, R"({"exp":1800000600,"iat":1,"sun":"alice"})"));
  ASSERT_TRUE(jwt.principal) << jwt.error;
  EXPECT_EQ(jwt.principal->user.uid, 1001u);
  EXPECT_FALSE(jwt.principal->admin);
  auto m = auth.authenticate("Munge MUNGE:root");
  ASSERT_TRUE(m.principal) << m.error;
  EXPECT_TRUE(m.principal->admin);
  EXPECT_EQ(m.principal->method, "munge");
}

TEST(Authenticator, RefusesWithAMessageThatSaysWhatToDo) {
  FakeUsers users;
  FakeMunge munge;
  Authenticator auth({kKey, true, {"root"}}, &munge, &users, [] { return kNow; });
  const std::pair<std::string, std::string> cases[] = {
      {"", "authentication required; send 'Authorization: Bearer"},
      {"Basic dXNlcjpwYXNz", "unsupported authorization scheme"},
      {"Munge garbage", "munge credential rejected: Invalid credential format; make a fresh one with munge -n"},
      {"Munge MUNGE:ghost", "uid 4242, who is unknown"},
      {"Munge ", "empty or oversized"},
      // Root's credential that carries a node's grid, taken on its way: it delivers the grid, it
      // does not make its taker root.
      {"Munge MUNGE:root+grid", "it carries a payload"},
      {"Bearer " + make_token(kKey, R"({"exp":1800000600,"sun":"mallory"})"), "'mallory', who is unknown"},
      {"Bearer x.y.z", "base64url"},
  };
  for (const auto& [header, expected] : cases) {
    auto r = auth.authenticate(header);
    EXPECT_FALSE(r.principal) << header;
    EXPECT_NE(r.error.find(expected), std::string::npos) << header << " -> " << r.error;
  }
  auto grid = auth.open_munge_payload("MUNGE:root+grid\n");
  ASSERT_TRUE(grid.who.principal) << grid.who.error;
  EXPECT_TRUE(grid.who.principal->admin);
  EXPECT_EQ(grid.payload, R"({"node":"n1"})");
  EXPECT_FALSE(auth.open_munge_payload("").who.principal);
  EXPECT_FALSE(auth.open_munge_payload("garbage").who.principal);
  Authenticator no_jwt({"", true, {}}, &munge, &users);
  EXPECT_NE(no_jwt.authenticate("Bearer a.b.c").error.find("JWT authentication is not enabled"), std::string::npos);
  Authenticator no_munge({kKey, false, {}}, &munge, &users);
  EXPECT_NE(no_munge.authenticate("Munge MUNGE:alice").error.find("munge authentication is not enabled"), std::string::npos);
}

// One decoder, two alphabets: JWT segments (base64url, strict) and kubeconfig data (standard).
TEST(Base64, UrlAndStandardAlphabets) {
  EXPECT_EQ(base64_decode("-_8", Base64::url), std::string("\xfb\xff", 2));
  EXPECT_EQ(base64_decode("+/8=", Base64::standard), std::string("\xfb\xff", 2));
  EXPECT_EQ(base64_decode("aGVs\nbG8=\r\n", Base64::standard), "hello");
  EXPECT_EQ(base64_decode("aGVsbG8", Base64::url), "hello");
  EXPECT_FALSE(base64_decode("+/8", Base64::url)) << "the standard alphabet is not base64url";
  EXPECT_FALSE(base64_decode("-_8", Base64::standard)) << "nor the other way round";
  EXPECT_FALSE(base64_decode("aGVsbG8=", Base64::url)) << "JWTs are unpadded";
  EXPECT_FALSE(base64_decode("a", Base64::url)) << "6 dangling bits: no encoder writes that";
  EXPECT_FALSE(base64_decode("aGV*", Base64::standard));
}

}  // namespace
}  // namespace safe::bridge
