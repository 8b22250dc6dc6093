// The web console's side of the bridge (kube-bridge/bridge_console.cpp, console_session.cpp):
// its files and their headers, sign-in with a Slurm JWT into an HttpOnly SameSite=Strict cookie,
// the cookie as a credential for the API, and the CSRF token every state-changing request on the
// cookie needs. Through fakes, as the API's own tests.
#include <gtest/gtest.h>
#include <jansson.h>

#include <algorithm>

#include "kube-bridge/bridge_api.hpp"
#include "tests/unit/fake_slurm.hpp"
#include "tests/unit/fake_user_directory.hpp"
#include "tests/unit/slurm_jwt_maker.hpp"

namespace safe::bridge {
namespace {

using safe::testing::make_token;

const std::string kKey(32, 'k');
constexpr std::time_t kNow = 1'800'000'000;

class NoMunge : public MungeDecoder {
 public:
  Result decode(const std::string&) override { return {std::nullopt, "Invalid credential"}; }
};

class AnyWorkDir : public UserWorkDirs {
 public:
  Result<std::string> prepare(const UserRecord& user) override { return user.home + "/safe-bridge"; }
};

std::string header_of(const ApiResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

std::string field_of(const ApiResponse& r, const char* name) {
  json_t* j = json_loads(r.body.c_str(), 0, nullptr);
  const char* v = json_string_value(json_object_get(j, name));
  std::string out = v ? v : "";
  json_decref(j);
  return out;
}

class ConsoleTest : public ::testing::Test {
 protected:
  ConsoleTest() {
    ConfigResult c = parse_config("workspaces:\n  - name: ml\n    users: [alice, bob]\n", "t.yaml");
    EXPECT_TRUE(c.ok());
    BridgeSettings s;
    s.config = *c.config;
    slurm.add_node("n1").gres = "gpu:8";
    api = std::make_unique<BridgeApi>(s, auth, users, slurm_cache, metrics, work_dirs);
  }

  static std::string token(const std::string& user, std::time_t exp = kNow + 600) {
    return make_token(kKey, R"({"exp":)" + std::to_string(exp) + R"(,"iat":1,"sun":")" + user + R"("})");
  }

  ApiResponse request(const std::string& method, const std::string& path, const std::string& cookie,
                      const std::string& csrf = "", const std::string& body = "", bool tls = false) {
    ApiRequest r;
    r.method = method;
    r.path = path;
    r.body = body;
    r.client = "127.0.0.1";
    r.cookie = cookie;
    r.csrf_token = csrf;
    r.tls = tls;
    return api->handle(r);
  }

  // Signs `user` in as the console does; the cookie header the browser then sends, and the CSRF token.
  std::pair<std::string, std::string> sign_in(const std::string& user) {
    ApiResponse r = request("POST", "/console/session", "", "sign-in", R"({"token":")" + token(user) + R"("})");
    EXPECT_EQ(r.status, 200) << r.body;
    std::string set = header_of(r, "Set-Cookie");
    return {set.substr(0, set.find(';')), field_of(r, "csrf")};
  }

  std::string submit(const std::string& user) {
    ApiRequest r;
    r.method = "POST";
    r.path = "/api/v1/workloads";
    r.authorization = "Bearer " + token(user);
    r.body = R"({"name":"train","workspace":"ml","command":["python","train.py"],"nodes":1,"gpusPerNode":1})";
    ApiResponse created = api->handle(r);
    EXPECT_EQ(created.status, 201) << created.body;
    return field_of(created, "id");
  }

  long cancels() const {
    return std::count_if(slurm.calls.begin(), slurm.calls.end(), [](const std::string& c) { return c.starts_with("cancel "); });
  }

  FakeUserDirectory users{{{"alice", {"alice", 1001, 1001, {}, "/home/alice"}}, {"bob", {"bob", 1002, 1002, {}, "/home/bob"}}}};
  NoMunge munge;
  testing::FakeSlurm slurm;
  SlurmCache slurm_cache{slurm, slurm, std::chrono::milliseconds(0)};
  BridgeMetrics metrics;
  AnyWorkDir work_dirs;
  Authenticator auth{{kKey, true, {}}, &munge, &users, [] { return kNow; }};
  std::unique_ptr<BridgeApi> api;
};

TEST_F(ConsoleTest, ThePageAndItsFilesAreServedWithAPolicyThatRunsOnlyTheBridgesOwnScripts) {
  ApiResponse page = request("GET", "/console/", "");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.content_type, "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("src=\"/console/console.js\""), std::string::npos);
  std::string csp = header_of(page, "Content-Security-Policy");
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << csp;
  EXPECT_EQ(csp.find("unsafe-inline"), std::string::npos) << csp;
  EXPECT_EQ(header_of(page, "X-Content-Type-Options"), "nosniff");
  EXPECT_EQ(request("GET", "/console/console.js", "").content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(request("GET", "/console/console.css", "").content_type, "text/css; charset=utf-8");
  EXPECT_EQ(request("GET", "/console/../api/v1/workloads", "").status, 404);
  EXPECT_EQ(request("GET", "/console/nothing.js", "").status, 404);
  ApiResponse bare = request("GET", "/console", "");
  EXPECT_EQ(bare.status, 308);
  EXPECT_EQ(header_of(bare, "Location"), "/console/");
  EXPECT_EQ(request("POST", "/console/", "").status, 405);
}

TEST_F(ConsoleTest, SignInKeepsTheTokenInAnHttpOnlyStrictCookieSecureUnderTls) {
  ApiResponse r = request("POST", "/console/session", "", "sign-in", R"({"token":"SLURM_JWT=)" + token("alice") + R"(\n"})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(field_of(r, "user"), "alice");
  EXPECT_EQ(field_of(r, "csrf").size(), 64u);
  EXPECT_EQ(header_of(r, "Set-Cookie"), "safe_session=" + token("alice") + "; Path=/; HttpOnly; SameSite=Strict");
  ApiResponse tls = request("POST", "/console/session", "", "sign-in", R"({"token":")" + token("alice") + R"("})", true);
  EXPECT_EQ(header_of(tls, "Set-Cookie"), "safe_session=" + token("alice") + "; Path=/; HttpOnly; SameSite=Strict; Secure");
}

TEST_F(ConsoleTest, SignInRefusesBadTokensAndRequestsNoConsoleCouldHaveSent) {
  // No header: a form on another site posting here.
  EXPECT_EQ(request("POST", "/console/session", "", "", R"({"token":")" + token("alice") + R"("})").status, 403);
  EXPECT_EQ(request("POST", "/console/session", "", "sign-in", R"({"token":")" + token("alice", kNow - 1) + R"("})").status, 401);
  EXPECT_EQ(request("POST", "/console/session", "", "sign-in", R"({"token":")" + token("mallory") + R"("})").status, 401);
  // Nothing that could end the cookie or start another reaches a header.
  ApiResponse injected = request("POST", "/console/session", "", "sign-in", R"({"token":"a.b.c; Domain=evil"})");
  EXPECT_EQ(injected.status, 400);
  EXPECT_EQ(header_of(injected, "Set-Cookie"), "");
  EXPECT_EQ(request("POST", "/console/session", "", "sign-in", "not json").status, 400);
}

TEST_F(ConsoleTest, TheCookieAuthenticatesTheApiAsItsUserAndNoOneElse) {
  std::string alices = submit("alice");
  submit("bob");
  auto [cookie, csrf] = sign_in("alice");
  ApiResponse list = request("GET", "/api/v1/workloads", "other=1; " + cookie + "; more=2");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_EQ(list.user, "alice");
  EXPECT_NE(list.body.find(alices), std::string::npos);
  EXPECT_NE(list.body.find("\"total\":1"), std::string::npos) << "alice sees only hers: " << list.body;
  ApiResponse session = request("GET", "/console/session", cookie);
  EXPECT_EQ(field_of(session, "user"), "alice");
  EXPECT_EQ(field_of(session, "csrf"), csrf);
  // The cookie's token expires as a Bearer token does.
  std::string expired = "safe_session=" + token("alice", kNow - 1);
  EXPECT_EQ(request("GET", "/api/v1/workloads", expired).status, 401);
  EXPECT_EQ(request("GET", "/console/session", expired).status, 401);
  EXPECT_EQ(request("GET", "/api/v1/workloads", "").status, 401);
}

TEST_F(ConsoleTest, AStateChangingRequestOnTheCookieNeedsItsSessionsCsrfToken) {
  std::string id = submit("alice");
  auto [alice_cookie, alice_csrf] = sign_in("alice");
  auto [bob_cookie, bob_csrf] = sign_in("bob");
  EXPECT_NE(alice_csrf, bob_csrf);
  std::string stop = "/api/v1/workloads/" + id + "/stop";
  EXPECT_EQ(request("POST", stop, alice_cookie).status, 403) << "no token";
  EXPECT_EQ(request("POST", stop, alice_cookie, "sign-in").status, 403) << "the sign-in header is no token";
  EXPECT_EQ(request("POST", stop, alice_cookie, bob_csrf).status, 403) << "another session's token";
  EXPECT_EQ(request("DELETE", "/api/v1/workloads/" + id, alice_cookie).status, 403);
  EXPECT_EQ(cancels(), 0) << "nothing was cancelled by a refused request";
  EXPECT_EQ(request("POST", stop, alice_cookie, alice_csrf).status, 202);
  EXPECT_EQ(cancels(), 1);
}

TEST_F(ConsoleTest, SignOutClearsTheCookieAndNeedsTheTokenOfALiveSession) {
  auto [cookie, csrf] = sign_in("alice");
  EXPECT_EQ(request("DELETE", "/console/session", cookie).status, 403);
  ApiResponse out = request("DELETE", "/console/session", cookie, csrf);
  EXPECT_EQ(out.status, 204);
  EXPECT_EQ(header_of(out, "Set-Cookie"), "safe_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
  // An ended session is cleared without a token: there is nothing left to protect.
  EXPECT_EQ(request("DELETE", "/console/session", "safe_session=" + token("alice", kNow - 1)).status, 204);
}

TEST(ConsoleSessions, TheSessionCookieIsFoundAmongOthersAndOnlyATokenShapedValueCounts) {
  EXPECT_EQ(ConsoleSessions::token_of("safe_session=a.b.c"), "a.b.c");
  EXPECT_EQ(ConsoleSessions::token_of("x=1; safe_session=a.b.c; y=2"), "a.b.c");
  EXPECT_EQ(ConsoleSessions::token_of("not_safe_session=a.b.c"), std::nullopt);
  EXPECT_EQ(ConsoleSessions::token_of("safe_sessionx=a.b.c"), std::nullopt);
  EXPECT_EQ(ConsoleSessions::token_of("safe_session="), std::nullopt);
  EXPECT_EQ(ConsoleSessions::parse_token("SLURM_JWT=a.b.c\n"), "a.b.c");
  EXPECT_EQ(ConsoleSessions::parse_token("a.b"), std::nullopt);
  EXPECT_EQ(ConsoleSessions::parse_token("a.b.c\r\nSet-Cookie: x"), std::nullopt);
  EXPECT_EQ(ConsoleSessions::parse_token(std::string(9000, 'a') + ".b.c"), std::nullopt);
  ConsoleSessions one("key one"), two("key two");
  EXPECT_TRUE(one.csrf_matches("a.b.c", one.csrf_token("a.b.c")));
  EXPECT_FALSE(one.csrf_matches("a.b.c", two.csrf_token("a.b.c"))) << "another bridge process's key";
  EXPECT_FALSE(one.csrf_matches("a.b.d", one.csrf_token("a.b.c")));
  EXPECT_FALSE(one.csrf_matches("a.b.c", ""));
}

}  // namespace
}  // namespace safe::bridge
