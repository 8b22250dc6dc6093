// safed's API: who may see and do what. Read routes need a credential and show a user only their
// own jobs; releasing a node is for admins; /metrics and /healthz stay open.
#include "controller/safed/controller_api.hpp"

#include <gtest/gtest.h>

#include "tests/unit/fake_user_directory.hpp"

namespace safe {
namespace {

class Users : public bridge::FakeUserDirectory {
 public:
  Users() : FakeUserDirectory({{"alice", {"alice", 1001, 1001, {}, "/home/alice"}}, {"root", {"root", 0, 0, {}, "/root"}}}) {}
};

// "Munge as-NAME" is NAME's credential; "as-NAME|PAYLOAD" one that carries PAYLOAD.
class Munge : public MungeDecoder {
 public:
  Users* users = nullptr;
  Result decode(const std::string& c) override {
    if (!c.starts_with("as-")) return {std::nullopt, "Invalid credential"};
    auto bar = c.find('|');
    if (auto u = users->by_name(c.substr(3, bar == std::string::npos ? std::string::npos : bar - 3)))
      return {u->uid, "", bar == std::string::npos ? "" : c.substr(bar + 1)};
    return {std::nullopt, "Invalid credential"};
  }
};

class ControllerApiTest : public ::testing::Test {
 protected:
  ControllerApiTest() : auth({"", true, {"root"}}, &munge, &users) { munge.users = &users; }

  ControllerApi api() {
    ControllerData d;
    d.metrics = [] { return std::string("safe_controller_up 1\n"); };
    d.status = [this](std::optional<std::uint32_t> user) {
      seen_user = user;
      return std::string("{}");
    };
    d.jobs = [this](bool all, std::optional<std::uint32_t> user) {
      seen_user = user;
      seen_all = all;
      return std::string("{\"jobs\":[]}");
    };
    d.job = [this](std::uint32_t id, std::optional<long long> submitted, std::optional<std::uint32_t> user) {
      seen_user = user;
      seen_submitted = submitted;
      // Job 7 is alice's.
      return id == 7 && (!user || *user == 1001) ? std::string("{\"job_id\":7}") : std::string();
    };
    d.failovers = [this](long long since, std::optional<std::uint32_t> user) {
      seen_user = user;
      seen_since = since;
      return std::string("{\"items\":[]}");
    };
    d.node_faults = [this](const std::string& node, long long since) {
      seen_node = node;
      seen_since = since;
      return std::string("{\"items\":[]}");
    };
    d.workspaces = [] { return std::string("{\"items\":[]}"); };
    d.ettr_history = [this](long long since, long long step) {
      seen_since = since;
      seen_step = step;
      return std::string("{\"items\":[]}");
    };
    d.node_gpus = [] { return std::string("{\"items\":[]}"); };
    d.put_node_gpus = [this](const NodeGpuReport& r) -> Result<bool> {
      if (r.node != "n1") return Error{"safed: Slurm has no node '" + r.node + "'"};
      kept_grid = r.node;
      return true;
    };
    d.release_node = [this](const std::string& node) {
      released = node;
      return ok_status();
    };
    return ControllerApi(auth, d);
  }
  HttpResponse ask(const std::string& method, const std::string& path, const std::string& who = "",
                   std::multimap<std::string, std::string> query = {}) {
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.query = std::move(query);
    if (!who.empty()) r.authorization = "Munge as-" + who;
    return api().handle(r);
  }

  Users users;
  Munge munge;
  Authenticator auth;
  std::optional<std::uint32_t> seen_user = 12345;
  std::optional<long long> seen_submitted;
  bool seen_all = false;
  std::string released;
  long long seen_since = -1;
  long long seen_step = -1;
  std::string kept_grid;
  std::string seen_node = "unset";
};

TEST_F(ControllerApiTest, HealthAndMetricsAreOpen) {
  EXPECT_EQ(200, ask("GET", "/healthz").status);
  HttpResponse m = ask("GET", "/metrics");
  EXPECT_EQ(200, m.status);
  EXPECT_EQ("safe_controller_up 1\n", m.body);
  EXPECT_TRUE(ControllerApi::is_inline({"GET", "/healthz", {}, "", "", ""}));
}

TEST_F(ControllerApiTest, ReadRoutesNeedACredential) {
  for (const char* path : {"/api/v1/status", "/api/v1/jobs", "/api/v1/jobs/7"}) {
    HttpResponse r = ask("GET", path);
    EXPECT_EQ(401, r.status) << path;
    EXPECT_NE(std::string::npos, r.body.find("authentication required")) << r.body;
  }
  HttpRequest forged;
  forged.method = "GET";
  forged.path = "/api/v1/jobs";
  forged.authorization = "Munge as-mallory";
  EXPECT_EQ(401, api().handle(forged).status);
}

TEST_F(ControllerApiTest, AUserSeesOnlyTheirOwnJobs) {
  EXPECT_EQ(200, ask("GET", "/api/v1/jobs", "alice", {{"all", "1"}}).status);
  EXPECT_EQ(std::optional<std::uint32_t>(1001), seen_user);
  EXPECT_TRUE(seen_all);
  EXPECT_EQ(200, ask("GET", "/api/v1/status", "alice").status);
  EXPECT_EQ(std::optional<std::uint32_t>(1001), seen_user);
  EXPECT_EQ(200, ask("GET", "/api/v1/jobs/7", "alice", {{"submitted", "900"}}).status);
  EXPECT_EQ(std::optional<long long>(900), seen_submitted);
  EXPECT_EQ(200, ask("GET", "/api/v1/jobs", "root").status);
  EXPECT_EQ(std::nullopt, seen_user) << "an admin sees every job";
  EXPECT_EQ(422, ask("GET", "/api/v1/jobs/7", "alice", {{"submitted", "x"}}).status);
  EXPECT_EQ(404, ask("GET", "/api/v1/jobs/8", "alice").status);
}

TEST_F(ControllerApiTest, FailoversAreTheirJobsOwnersAndNodeFaultsEveryUsers) {
  EXPECT_EQ(401, ask("GET", "/api/v1/failovers").status);
  EXPECT_EQ(401, ask("GET", "/api/v1/node-faults").status);
  EXPECT_EQ(200, ask("GET", "/api/v1/failovers", "alice", {{"since", "100"}}).status);
  EXPECT_EQ(std::optional<std::uint32_t>(1001), seen_user);
  EXPECT_EQ(100, seen_since);
  EXPECT_EQ(200, ask("GET", "/api/v1/failovers", "root").status);
  EXPECT_EQ(std::nullopt, seen_user) << "an admin sees every job's";
  EXPECT_EQ(0, seen_since);
  EXPECT_EQ(200, ask("GET", "/api/v1/node-faults", "alice", {{"node", "n1"}, {"since", "5"}}).status);
  EXPECT_EQ("n1", seen_node);
  EXPECT_EQ(5, seen_since);
  EXPECT_EQ(200, ask("GET", "/api/v1/node-faults", "alice").status);
  EXPECT_EQ("", seen_node) << "no node: the cluster's";
  EXPECT_EQ(422, ask("GET", "/api/v1/failovers", "alice", {{"since", "yesterday"}}).status);
  EXPECT_EQ(422, ask("GET", "/api/v1/node-faults", "alice", {{"node", "n1;drop"}}).status);
  EXPECT_EQ(405, ask("POST", "/api/v1/failovers", "root").status);
}

TEST_F(ControllerApiTest, WorkspacesAndTheirEttrHistoryAreEveryUsers) {
  EXPECT_EQ(401, ask("GET", "/api/v1/workspaces").status);
  EXPECT_EQ(401, ask("GET", "/api/v1/ettr-history").status);
  EXPECT_EQ(200, ask("GET", "/api/v1/workspaces", "alice").status);
  EXPECT_EQ(200, ask("GET", "/api/v1/ettr-history", "alice").status);
  EXPECT_EQ(0, seen_since);
  EXPECT_EQ(86400, seen_step) << "a day when left out";
  EXPECT_EQ(200, ask("GET", "/api/v1/ettr-history", "alice", {{"since", "1000"}, {"step", "3600"}}).status);
  EXPECT_EQ(1000, seen_since);
  EXPECT_EQ(3600, seen_step);
  for (auto bad : std::vector<std::multimap<std::string, std::string>>{
           {{"step", "59"}}, {{"step", "0"}}, {{"since", "-1"}}, {{"since", "today"}}, {{"until", "5"}}}) {
    HttpResponse r = ask("GET", "/api/v1/ettr-history", "alice", bad);
    EXPECT_EQ(422, r.status) << bad.begin()->first << "=" << bad.begin()->second;
    EXPECT_NE(std::string::npos, r.body.find("at least 60")) << r.body;
  }
  EXPECT_EQ(405, ask("POST", "/api/v1/workspaces", "root").status);
  EXPECT_EQ(405, ask("DELETE", "/api/v1/ettr-history", "root").status);
}

TEST_F(ControllerApiTest, ANodesGpuGridComesSignedByAnAdminAndEveryUserReadsThem) {
  // The body is the credential that carries the grid; no Authorization header is needed.
  auto post = [&](const std::string& path, const std::string& body, const std::string& header = "") {
    HttpRequest r;
    r.method = "POST";
    r.path = path;
    r.body = body;
    r.authorization = header;
    return api().handle(r);
  };
  NodeGpuReport grid;
  grid.node = "n1";
  grid.time = 5;
  const std::string signed_by_root = "as-root|" + to_json(grid);
  EXPECT_EQ(401, post("/api/v1/nodes/n1/gpus", "").status);
  EXPECT_EQ(401, post("/api/v1/nodes/n1/gpus", to_json(grid), "Munge as-root").status)
      << "a grid beside an admin's credential is not signed by it";
  EXPECT_EQ(401, post("/api/v1/nodes/n1/gpus", "as-mallory|" + to_json(grid)).status);
  HttpResponse refused = post("/api/v1/nodes/n1/gpus", "as-alice|" + to_json(grid));
  EXPECT_EQ(403, refused.status);
  EXPECT_NE(std::string::npos, refused.body.find("health checker")) << refused.body;
  EXPECT_EQ(422, post("/api/v1/nodes/n1/gpus", "as-root|{\"node\":\"n1\"}").status);
  EXPECT_EQ(422, post("/api/v1/nodes/n2/gpus", signed_by_root).status) << "n1's grid sent as n2's";
  grid.node = "n9";
  EXPECT_EQ(404, post("/api/v1/nodes/n9/gpus", "as-root|" + to_json(grid)).status) << "Slurm has no n9";
  EXPECT_TRUE(kept_grid.empty());
  EXPECT_EQ(200, post("/api/v1/nodes/n1/gpus", signed_by_root + "\n").status);
  EXPECT_EQ("n1", kept_grid);
  EXPECT_EQ(405, ask("GET", "/api/v1/nodes/n1/gpus", "root").status);
  EXPECT_EQ(401, ask("GET", "/api/v1/node-gpus").status);
  EXPECT_EQ(200, ask("GET", "/api/v1/node-gpus", "alice").status);
}

TEST_F(ControllerApiTest, OnlyAnAdminReleasesANode) {
  HttpResponse r = ask("POST", "/api/v1/nodes/n3/release", "alice");
  EXPECT_EQ(403, r.status);
  EXPECT_NE(std::string::npos, r.body.find("for administrators")) << r.body;
  EXPECT_TRUE(released.empty());
  EXPECT_EQ(401, ask("POST", "/api/v1/nodes/n3/release").status);
  EXPECT_EQ(200, ask("POST", "/api/v1/nodes/n3/release", "root").status);
  EXPECT_EQ("n3", released);
  EXPECT_EQ(405, ask("GET", "/api/v1/nodes/n3/release", "root").status);
}

TEST_F(ControllerApiTest, UnknownRoutesAndMethods) {
  EXPECT_EQ(404, ask("GET", "/api/v1/other", "root").status);
  EXPECT_EQ(404, ask("GET", "/elsewhere").status);
  EXPECT_EQ(405, ask("POST", "/api/v1/jobs", "root").status);
  EXPECT_EQ(405, ask("DELETE", "/metrics").status);
}

}  // namespace
}  // namespace safe
