// The REST API end to end through fakes: routing, authentication, authorization, validation
// and the Slurm target's submissions, without sockets, Slurm or munged.
#include <gtest/gtest.h>
#include <jansson.h>

#include <fstream>
#include <map>
#include <sstream>

#include "common/admission.hpp"
#include "kube-bridge/bridge_api.hpp"
#include "kube-bridge/openapi_document.hpp"
#include "kube-bridge/slurm_workload.hpp"
#include "tests/unit/fake_slurm.hpp"
#include "tests/unit/fake_user_directory.hpp"
#include "tests/unit/health_test_support.hpp"
#include "tests/unit/source_path.hpp"

namespace safe::bridge {
namespace {

class FakeUsers : public FakeUserDirectory {
 public:
  FakeUsers()
      : FakeUserDirectory(
            {{"alice", {"alice", 1001, 1001, {}, "/home/alice"}}, {"bob", {"bob", 1002, 1002, {}, "/home/bob"}},
             {"root", {"root", 0, 0, {}, "/root"}}}) {}
};

// Each user's working directory; `refuse` names a user whose directory cannot be used.
class FakeWorkDirs : public UserWorkDirs {
 public:
  std::string refuse;
  Result<std::string> prepare(const UserRecord& user) override {
    if (user.name == refuse) return Error{"safe: cannot use /home/" + user.name + "/safe-bridge: it belongs to another user"};
    return user.home + "/safe-bridge";
  }
};

// "Munge as-NAME" authenticates NAME.
class FakeMunge : public MungeDecoder {
 public:
  FakeUsers* users;
  Result decode(const std::string& c) override {
    if (c.starts_with("as-"))
      if (auto u = users->by_name(c.substr(3))) return {u->uid, ""};
    return {std::nullopt, "Invalid credential"};
  }
};

class BridgeApiTest : public ::testing::Test {
 protected:
  BridgeApiTest() {
    munge.users = &users;
    ConfigResult c = parse_config(
        "workspaces:\n  - name: ml\n    gpu_quota: 8\n    users: [alice]\n    max_retries: 4\n"
        "  - name: cv\n    users: [bob]\n",
        "t.yaml");
    EXPECT_TRUE(c.ok());
    BridgeSettings s;
    s.config = *c.config;
    s.openapi_document = "{}";
    // Stands in for job_submit_safe: refuses what the policy refuses, as Slurm's access denied.
    slurm.policy = [config = s.config, this](const SlurmJobRequest& r) -> std::optional<std::string> {
      AdmissionRequest a;
      std::vector<std::string_view> env(r.spank_env.begin(), r.spank_env.end());
      a.options = parse_spank_job_env(env).options;
      a.gpus = static_cast<long long>(r.nodes) * r.gpus_per_node;
      if (admit_job(config, a, job_users.at(r.uid)).accepted) return std::nullopt;
      return "Access/permission denied";
    };
    SlurmNode& n1 = slurm.add_node("n1");
    n1.gres = "gpu:8";
    n1.cpus = 8;
    SlurmNode& n2 = slurm.add_node("n2", "IDLE+DRAIN", "SaFE: gpu3 ECC");
    n2.gres = "gpu:8";
    n2.cpus = 8;
    slurm.licenses = {{"safe_ws_ml", 8, 2}};
    // Job output files, read as their owner's (the bridge's reader checks the owner).
    auto read_output = [this](const std::string& path, uid_t owner, std::size_t max) -> Result<std::string> {
      auto it = outputs.find(path);
      if (it == outputs.end()) return Error{path + ": No such file or directory"};
      if (it->second.first != owner) return Error{path + ": owned by uid " + std::to_string(it->second.first)};
      return tail_of(it->second.second, max);
    };
    api = std::make_unique<BridgeApi>(s, auth, users, slurm_cache, metrics, work_dirs, read_output);
  }

  ApiResponse call(const std::string& method, const std::string& path, const std::string& who, const std::string& body = "",
                   std::multimap<std::string, std::string> query = {}) {
    ApiRequest r{method, path, std::move(query), who.empty() ? "" : "Munge as-" + who, body, "127.0.0.1"};
    return api->handle(r);
  }

  std::string created_id(const ApiResponse& r) {
    json_t* j = json_loads(r.body.c_str(), 0, nullptr);
    std::string id = json_string_value(json_object_get(j, "id")) ? json_string_value(json_object_get(j, "id")) : "";
    json_decref(j);
    return id;
  }

  FakeUsers users;
  FakeMunge munge;
  testing::FakeSlurm slurm;
  std::map<std::string, std::pair<uid_t, std::string>> outputs;  // path -> owner, text
  std::map<uid_t, JobUser> job_users{{1001, {"alice", {}}}, {1002, {"bob", {}}}, {0, {"root", {}}}};
  SlurmCache slurm_cache{slurm, slurm, std::chrono::milliseconds(0)};
  BridgeMetrics metrics;
  FakeWorkDirs work_dirs;
  Authenticator auth{{"", true, {"root"}}, &munge, &users};
  std::unique_ptr<BridgeApi> api;
};

const char* kSpec = R"({"name":"train","workspace":"ml","command":["python","train.py"],"nodes":2,"gpusPerNode":4,
  "retries":2,"checkpoint":{"dir":"/ckpt/r1"},"labels":{"team":"llm"},"env":{"LR":"0.1"}})";

TEST_F(BridgeApiTest, PublicEndpointsNeedNoCredentials) {
  EXPECT_EQ(call("GET", "/healthz", "").status, 200);
  EXPECT_EQ(call("GET", "/openapi.json", "").body, "{}");
  auto m = call("GET", "/metrics", "");
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("safe_bridge_requests_total"), std::string::npos);
  EXPECT_EQ(call("POST", "/healthz", "").status, 405);
}

TEST_F(BridgeApiTest, EverythingUnderApiNeedsCredentials) {
  for (const char* path : {"/api/v1/workloads", "/api/v1/workloads/slurm-1", "/api/v1/nodes", "/api/v1/workspaces"}) {
    auto r = call("GET", path, "");
    EXPECT_EQ(r.status, 401) << path;
    EXPECT_NE(r.body.find("Authorization: Bearer"), std::string::npos);
  }
  ApiRequest bad{"GET", "/api/v1/workloads", {}, "Munge forged", "", ""};
  EXPECT_EQ(api->handle(bad).status, 401);
}

TEST_F(BridgeApiTest, CreateSubmitsAsTheUserWithSbatchStyleOptions) {
  auto r = call("POST", "/api/v1/workloads", "alice", kSpec);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(created_id(r), "slurm-100");
  ASSERT_EQ(slurm.submitted.size(), 1u);
  const SlurmJobRequest& s = slurm.submitted[0];
  EXPECT_EQ(s.uid, 1001u);
  EXPECT_EQ(s.gid, 1001u);
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.script, "#!/bin/bash\nexec srun --kill-on-bad-exit=1 'python' 'train.py'\n");
  EXPECT_EQ(s.work_dir, "/home/alice/safe-bridge");
  EXPECT_EQ(s.std_out, "/home/alice/safe-bridge/safe-bridge-train-%j.out");
  EXPECT_EQ(s.spank_env, (std::vector<std::string>{"_SLURM_SPANK_OPTION_safe_safe_workspace=ml",
                                                    "_SLURM_SPANK_OPTION_safe_safe_retries=2",
                                                    "_SLURM_SPANK_OPTION_safe_safe_ckpt_dir=/ckpt/r1"}));
  auto has = [&](const std::string& e) { return std::find(s.environment.begin(), s.environment.end(), e) != s.environment.end(); };
  EXPECT_TRUE(has("LR=0.1"));
  EXPECT_TRUE(has("USER=alice"));
  EXPECT_TRUE(has("HOME=/home/alice")) << "the user's own home, never a directory shared by all workloads";
  EXPECT_TRUE(has("SLURM_SPANK__SLURM_SPANK_OPTION_safe_safe_workspace=ml"));
  EXPECT_EQ(s.comment, R"(safe-bridge:{"labels":{"team":"llm"}})");
  EXPECT_EQ(r.headers.at(0), (std::pair<std::string, std::string>{"Location", "/api/v1/workloads/slurm-100"}));
}

// minNodes: Slurm may resize the job, so it asks for nodes only and its srun gives one task each.
TEST_F(BridgeApiTest, AnElasticWorkloadAsksForNodesNotTasks) {
  auto r = call("POST", "/api/v1/workloads", "alice",
                R"({"name":"el","command":["python","train.py"],"nodes":4,"minNodes":2,"nodeMultiple":2})");
  ASSERT_EQ(r.status, 201) << r.body;
  const SlurmJobRequest& s = slurm.submitted.at(0);
  EXPECT_TRUE(s.elastic);
  EXPECT_EQ(s.script, "#!/bin/bash\nexec srun --kill-on-bad-exit=1 --ntasks-per-node=1 'python' 'train.py'\n");
  EXPECT_EQ(s.spank_env, (std::vector<std::string>{"_SLURM_SPANK_OPTION_safe_safe_min_nodes=2",
                                                    "_SLURM_SPANK_OPTION_safe_safe_node_multiple=2"}));
}

TEST_F(BridgeApiTest, AWorkloadIsNotSubmittedWhenItsUsersWorkingDirectoryIsUnfit) {
  work_dirs.refuse = "alice";
  auto r = call("POST", "/api/v1/workloads", "alice", kSpec);
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("belongs to another user"), std::string::npos) << r.body;
  EXPECT_TRUE(slurm.submitted.empty());
}

TEST_F(BridgeApiTest, WorkspacePolicyRefusesWithTheCliMessage) {
  auto r = call("POST", "/api/v1/workloads", "bob", kSpec);
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("safe: user 'bob' is not a member of workspace 'ml'"), std::string::npos) << r.body;
  auto quota = call("POST", "/api/v1/workloads", "alice", R"({"name":"big","workspace":"ml","script":"x","nodes":2,"gpusPerNode":8})");
  EXPECT_EQ(quota.status, 403);
  EXPECT_NE(quota.body.find("quota of 8"), std::string::npos) << quota.body;
  EXPECT_TRUE(slurm.submitted.empty());
}

TEST_F(BridgeApiTest, ValidationAndMalformedBodies) {
  auto r = call("POST", "/api/v1/workloads", "alice", R"({"name":"x","script":"y","retries":99,"bogus":1})");
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find(R"({"path":"retries","message":"safe: --safe-retries expects an integer 0..50, got '99'"})"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find(R"("path":"bogus")"), std::string::npos);
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", "{not json").status, 400);
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", "").status, 400);
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", std::string(50000, '[')).status, 400);
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", R"({"name":"k","target":"kubernetes","image":"i","script":"x"})").status, 422);
  slurm.reject = "Requested node configuration is not available";
  auto rejected = call("POST", "/api/v1/workloads", "alice", R"({"name":"x","script":"y"})");
  EXPECT_EQ(rejected.status, 422);
  EXPECT_NE(rejected.body.find("Slurm rejected the workload: Requested node configuration"), std::string::npos);
}

TEST_F(BridgeApiTest, UsersSeeOnlyTheirOwnWorkloads) {
  std::string id = created_id(call("POST", "/api/v1/workloads", "alice", kSpec));
  auto missing = call("GET", "/api/v1/workloads/slurm-999", "bob");
  auto others = call("GET", "/api/v1/workloads/" + id, "bob");
  EXPECT_EQ(others.status, 404);
  // Another user's workload and a missing one read the same, but for the id itself.
  EXPECT_EQ(others.body.substr(others.body.find("' ")), missing.body.substr(missing.body.find("' ")));
  EXPECT_EQ(call("POST", "/api/v1/workloads/" + id + "/stop", "bob").status, 404);
  EXPECT_EQ(call("DELETE", "/api/v1/workloads/" + id, "bob").status, 404);
  EXPECT_EQ(call("GET", "/api/v1/workloads/" + id + "/logs", "bob").status, 404);
  EXPECT_EQ(0, slurm.count("cancel"));
  EXPECT_NE(call("GET", "/api/v1/workloads", "bob").body.find(R"("total":0)"), std::string::npos);
  EXPECT_NE(call("GET", "/api/v1/workloads", "alice").body.find(R"("total":1)"), std::string::npos);
  EXPECT_NE(call("GET", "/api/v1/workloads", "root").body.find(R"("total":1)"), std::string::npos);
  auto get = call("GET", "/api/v1/workloads/" + id, "alice");
  EXPECT_EQ(get.status, 200);
  EXPECT_NE(get.body.find(R"("labels":{"team":"llm"})"), std::string::npos) << get.body;
}

// One log request for both targets: ?attempt= names the log holding that attempt (on Slurm the
// job's one output file, which every attempt appends to), ?tailBytes= cuts it from the end.
TEST_F(BridgeApiTest, LogsHonourAttemptAndTailBytes) {
  std::string id = created_id(call("POST", "/api/v1/workloads", "alice", kSpec));
  const std::string path = "/home/alice/safe-bridge/safe-bridge-train-100.out";
  auto logs = [&](std::multimap<std::string, std::string> query) {
    return call("GET", "/api/v1/workloads/" + id + "/logs", "alice", "", std::move(query));
  };
  auto waiting = logs({});
  EXPECT_EQ(waiting.status, 404);
  EXPECT_NE(waiting.body.find("no output yet"), std::string::npos) << waiting.body;

  slurm.job(100)->state = SlurmJobState::running;
  slurm.job(100)->restart_count = 1;
  outputs[path] = {1001, "attempt one\nattempt two\n"};
  auto whole = logs({});
  EXPECT_EQ(whole.status, 200) << whole.body;
  EXPECT_EQ(whole.body, "attempt one\nattempt two\n");
  ASSERT_EQ(whole.headers.size(), 1u);
  EXPECT_EQ(whole.headers[0], (std::pair<std::string, std::string>{"X-Safe-Log-Attempts", "2"}));
  EXPECT_EQ(logs({{"tailBytes", "4"}}).body, "two\n");
  EXPECT_EQ(logs({{"attempt", "1"}, {"tailBytes", "4"}}).body, "two\n") << "attempt 1 is in the same file";
  auto unrun = logs({{"attempt", "3"}});
  EXPECT_EQ(unrun.status, 404);
  EXPECT_NE(unrun.body.find("attempt 3 has not run; the workload is at attempt 2"), std::string::npos) << unrun.body;
  EXPECT_EQ(logs({{"tailBytes", "0"}}).status, 422);
  EXPECT_EQ(logs({{"attempt", "x"}}).status, 422);
  EXPECT_EQ(logs({{"since", "1h"}}).status, 422);

  outputs[path].first = 1002;  // replaced by a file of another user's
  auto refused = logs({});
  EXPECT_EQ(refused.status, 404);
  EXPECT_NE(refused.body.find("not shown: " + path + ": owned by uid 1002"), std::string::npos) << refused.body;
}

TEST_F(BridgeApiTest, OneRouteTableAnswers405WithTheAllowedMethods) {
  auto put = call("PUT", "/api/v1/workloads", "alice");
  EXPECT_EQ(put.status, 405);
  EXPECT_EQ(put.headers, (std::vector<std::pair<std::string, std::string>>{{"Allow", "GET, POST"}}));
  auto post = call("POST", "/api/v1/workloads/slurm-1", "alice");
  EXPECT_EQ(post.headers, (std::vector<std::pair<std::string, std::string>>{{"Allow", "GET, DELETE"}}));
  EXPECT_EQ(call("GET", "/api/v1/workloads/slurm-1/stop/now", "alice").status, 404);
  EXPECT_EQ(call("GET", "/api/v1", "alice").status, 404);
  EXPECT_EQ(call("GET", "/api/v1/workspaces/ml/x", "alice").status, 404);
  EXPECT_EQ(call("DELETE", "/api/v1/nodes", "").status, 401) << "the credential is asked for before the method";
}

TEST_F(BridgeApiTest, JobsNotMadeByTheBridgeAreNotWorkloads) {
  SlurmJob j;
  j.id = 7;
  j.user_id = 1001;
  j.state = SlurmJobState::running;
  j.comment = "something else";
  slurm.jobs.push_back(j);
  EXPECT_EQ(call("GET", "/api/v1/workloads/slurm-7", "alice").status, 404);
  EXPECT_NE(call("GET", "/api/v1/workloads", "alice").body.find(R"("total":0)"), std::string::npos);
}

TEST_F(BridgeApiTest, StopAndDeleteCancel) {
  std::string id = created_id(call("POST", "/api/v1/workloads", "alice", kSpec));
  EXPECT_EQ(call("POST", "/api/v1/workloads/" + id + "/stop", "alice").status, 202);
  EXPECT_EQ(slurm.calls.back(), "cancel 100");
  EXPECT_EQ(call("DELETE", "/api/v1/workloads/" + id, "alice").status, 200);
  EXPECT_EQ(call("GET", "/api/v1/workloads/" + id, "alice").status, 404);
  EXPECT_NE(call("GET", "/api/v1/workloads", "alice").body.find(R"("total":0)"), std::string::npos);
}

// A deleted workload is hidden while Slurm still shows its job, and forgotten once Slurm has: the
// set never grows past the jobs Slurm holds, and a later job with the same id (a reused id) shows.
TEST_F(BridgeApiTest, ADeletedWorkloadIsForgottenOnceSlurmForgetsItsJob) {
  std::string id = created_id(call("POST", "/api/v1/workloads", "alice", kSpec));
  SlurmJob job = slurm.jobs.back();
  EXPECT_EQ(call("DELETE", "/api/v1/workloads/" + id, "alice").status, 200);
  EXPECT_EQ(call("GET", "/api/v1/workloads/" + id, "alice").status, 404);
  slurm.jobs.clear();  // past MinJobAge
  EXPECT_NE(call("GET", "/api/v1/workloads", "alice").body.find(R"("total":0)"), std::string::npos);
  slurm.jobs.push_back(job);  // the id, used again
  EXPECT_EQ(call("GET", "/api/v1/workloads/" + id, "alice").status, 200);
}

TEST_F(BridgeApiTest, ListFiltersAndPages) {
  for (int i = 0; i < 5; ++i) call("POST", "/api/v1/workloads", "alice", R"({"name":"w)" + std::to_string(i) + R"(","script":"x"})");
  slurm.jobs[1].state = SlurmJobState::running;
  auto page = call("GET", "/api/v1/workloads", "alice", "", {{"limit", "2"}, {"offset", "2"}});
  EXPECT_NE(page.body.find(R"("total":5,"nextOffset":4)"), std::string::npos) << page.body;
  EXPECT_NE(page.body.find(R"("name":"w2")"), std::string::npos);
  auto running = call("GET", "/api/v1/workloads", "alice", "", {{"state", "Running"}});
  EXPECT_NE(running.body.find(R"("total":1)"), std::string::npos) << running.body;
  EXPECT_NE(call("GET", "/api/v1/workloads", "alice", "", {{"target", "kubernetes"}}).body.find(R"("total":0)"), std::string::npos);
  EXPECT_EQ(call("GET", "/api/v1/workloads", "alice", "", {{"limit", "0"}}).status, 422);
  EXPECT_EQ(call("GET", "/api/v1/workloads", "alice", "", {{"limit", "1x"}}).status, 422);
  EXPECT_EQ(call("GET", "/api/v1/workloads", "alice", "", {{"sort", "x"}}).status, 422);
  EXPECT_EQ(call("GET", "/api/v1/workloads", "alice", "", {{"target", "mesos"}}).status, 422);
}

TEST_F(BridgeApiTest, HostileIdsAndPathsAreNotFound) {
  call("POST", "/api/v1/workloads", "alice", kSpec);
  for (const char* id : {"..", "slurm-100/../../etc/passwd", "slurm-0100", "slurm--1", "slurm-99999999999", "slurm-",
                         "100", "slurm-1%00", "SLURM-100"}) {
    auto r = call("GET", std::string("/api/v1/workloads/") + id, "alice");
    EXPECT_EQ(r.status, 404) << id;
  }
  EXPECT_EQ(call("GET", "/etc/passwd", "alice").status, 404);
  EXPECT_EQ(call("GET", "/api/v2/workloads", "alice").status, 404);
  EXPECT_EQ(call("PUT", "/api/v1/workloads", "alice").status, 405);
  EXPECT_EQ(call("GET", "/api/v1/workloads/slurm-100/stop", "alice").status, 405);
}

TEST_F(BridgeApiTest, EventsWorkspacesNodes) {
  std::string id = created_id(call("POST", "/api/v1/workloads", "alice", kSpec));
  slurm.jobs[0].state = SlurmJobState::failed;
  slurm.jobs[0].exit_code = 3 << 8;  // a wait status, as Slurm reports it: exit(3)
  slurm.jobs[0].restart_count = 1;
  slurm.jobs[0].start_time = 1'800'000'000;
  slurm.jobs[0].admin_comment = "safe: ws=ml retries=1/2 health=standard sig=USR1@120 hang=0 gpus=8 last=node_fault n2";
  auto events = call("GET", "/api/v1/workloads/" + id + "/events", "alice");
  EXPECT_NE(events.body.find("\"Requeued\""), std::string::npos) << events.body;
  EXPECT_NE(events.body.find("node_fault n2"), std::string::npos) << events.body;
  EXPECT_NE(events.body.find("FAILED, exit code 3"), std::string::npos) << events.body;

  auto ws = call("GET", "/api/v1/workspaces", "alice");
  EXPECT_NE(ws.body.find(R"("name":"ml","gpuQuota":8,"gpusInUse":2)"), std::string::npos) << ws.body;
  EXPECT_EQ(ws.body.find(R"("name":"cv")"), std::string::npos) << "alice is not a member of cv";
  EXPECT_EQ(call("GET", "/api/v1/workspaces/cv", "alice").status, 404);
  EXPECT_EQ(call("GET", "/api/v1/workspaces/cv", "root").status, 200);

  auto nodes = call("GET", "/api/v1/nodes", "alice");
  EXPECT_NE(nodes.body.find(R"("name":"n2","target":"slurm","state":"IDLE+DRAIN","reason":"SaFE: gpu3 ECC","gres":"gpu:8","cpus":8,"health":"unhealthy","safeDrained":true)"),
            std::string::npos)
      << nodes.body;
}

class FakeHistory : public ControllerHistory {
 public:
  std::optional<std::string> document, failover_document, faults_document, workspaces_document, ettr_document, gpus_document;
  long long since = -1, step = -1;
  std::string node;
  std::optional<std::string> job_history(std::uint32_t, long long) override { return document; }
  std::optional<std::string> failovers(long long s) override {
    since = s;
    return failover_document;
  }
  std::optional<std::string> node_faults(const std::string& n, long long s) override {
    node = n;
    since = s;
    return faults_document;
  }
  std::optional<std::string> workspaces() override { return workspaces_document; }
  std::optional<std::string> ettr_history(long long s, long long st) override {
    since = s;
    step = st;
    return ettr_document;
  }
  std::optional<std::string> node_gpus() override { return gpus_document; }
};

TEST_F(BridgeApiTest, GpuHealthIsEveryUsersToSee) {
  EXPECT_EQ(call("GET", "/api/v1/gpu-health", "alice").status, 503) << "no controller";
  FakeHistory history;
  api->set_controller_history(&history);
  history.gpus_document = R"({"items":[{"node":"n2","time":1800000000,"backend":"sim","checks":["gpu_responsive","ecc_uncorrectable"],
    "gpus":[{"index":3,"bus_id":"0000:03:00.0","failed":[{"check":"ecc_uncorrectable","detail":"gpu3 uncorrectable ECC=2"}]}],
    "gpu_count":"","unknown":"","received":1800000001}]})";
  auto r = call("GET", "/api/v1/gpu-health", "alice");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_NE(r.body.find(R"({"node":"n2","checkedAt":"2027-01-15T08:00:00Z","receivedAt":"2027-01-15T08:00:01Z","backend":"sim","checks":["gpu_responsive","ecc_uncorrectable"],)"
                        R"("gpus":[{"index":3,"busId":"0000:03:00.0","failed":[{"check":"ecc_uncorrectable","detail":"gpu3 uncorrectable ECC=2"}]}],"gpuCount":null,"unknown":null})"),
            std::string::npos) << r.body;
  EXPECT_EQ(call("GET", "/api/v1/gpu-health", "", "").status, 401);
  EXPECT_EQ(call("GET", "/api/v1/gpu-health", "alice", "", {{"node", "n2"}}).status, 422);
  history.gpus_document = "{}";
  EXPECT_EQ(call("GET", "/api/v1/gpu-health", "alice").status, 502);
}

TEST_F(BridgeApiTest, WorkspacesShowTheJobsTheirQuotaHoldsAndSafedsEttr) {
  for (int i = 0; i < 3; ++i) call("POST", "/api/v1/workloads", "alice", kSpec);
  ASSERT_EQ(slurm.jobs.size(), 3u);
  for (auto& j : slurm.jobs) {
    j.state = SlurmJobState::pending;
    j.reason = "Licenses";
    j.admin_comment = "safe: ws=ml retries=0/2 health=standard sig=USR1@120 hang=0 gpus=8";
  }
  slurm.jobs[1].reason = "Resources";  // waits for nodes, not for the quota
  slurm.jobs[2].admin_comment.clear();  // not a SaFE job: no workspace
  auto ws = call("GET", "/api/v1/workspaces/ml", "alice");
  EXPECT_NE(ws.body.find(R"("gpusInUse":2,"pendingHeldByQuota":1,"ettr":null,"timeLostSeconds":null)"), std::string::npos)
      << "no controller: " << ws.body;
  FakeHistory history;
  api->set_controller_history(&history);
  history.workspaces_document = R"({"items":[{"name":"ml","gpu_quota":8,"gpus_in_use":2,"ettr":0.75,"time_lost_s":12.5},
    {"name":"cv","gpu_quota":0,"gpus_in_use":0,"ettr":null,"time_lost_s":0}]})";
  ws = call("GET", "/api/v1/workspaces", "root");
  EXPECT_NE(ws.body.find(R"("pendingHeldByQuota":1,"ettr":0.75,"timeLostSeconds":12.5)"), std::string::npos) << ws.body;
  EXPECT_NE(ws.body.find(R"("pendingHeldByQuota":0,"ettr":null,"timeLostSeconds":0.0)"), std::string::npos)
      << "cv: none of its jobs ran yet: " << ws.body;
  history.workspaces_document = "garbage";
  EXPECT_NE(call("GET", "/api/v1/workspaces/ml", "alice").body.find(R"("ettr":null)"), std::string::npos);
}

TEST_F(BridgeApiTest, EttrHistoryShowsTheWorkspacesAUserBelongsTo) {
  EXPECT_EQ(call("GET", "/api/v1/ettr-history", "alice").status, 503) << "no controller";
  FakeHistory history;
  api->set_controller_history(&history);
  history.ettr_document = R"({"since":0,"step":86400,"items":[
    {"workspace":"","start":1800000000,"jobs":1,"productive_s":10,"wall_s":10,"ettr":1},
    {"workspace":"cv","start":1800000000,"jobs":2,"productive_s":5,"wall_s":10,"ettr":0.5},
    {"workspace":"ml","start":1800000000,"jobs":3,"productive_s":90,"wall_s":100,"ettr":0.9}]})";
  auto alice = call("GET", "/api/v1/ettr-history", "alice", "", {{"since", "1799990000"}, {"step", "3600"}});
  ASSERT_EQ(alice.status, 200) << alice.body;
  EXPECT_EQ(history.since, 1799990000);
  EXPECT_EQ(history.step, 3600);
  EXPECT_NE(alice.body.find(R"({"workspace":"ml","start":"2027-01-15T08:00:00Z","jobs":3,"ettr":0.9,"productiveSeconds":90.0,"wallSeconds":100.0})"),
            std::string::npos) << alice.body;
  EXPECT_EQ(alice.body.find(R"("cv")"), std::string::npos) << "alice is not in cv: " << alice.body;
  EXPECT_EQ(alice.body.find(R"("workspace":null)"), std::string::npos) << alice.body;
  auto root = call("GET", "/api/v1/ettr-history", "root");
  EXPECT_EQ(history.step, 86400) << "a day when left out";
  EXPECT_NE(root.body.find(R"("workspace":null)"), std::string::npos) << root.body;
  EXPECT_NE(root.body.find(R"("workspace":"cv")"), std::string::npos) << root.body;
  EXPECT_EQ(call("GET", "/api/v1/ettr-history", "alice", "", {{"step", "10"}}).status, 422);
  EXPECT_EQ(call("GET", "/api/v1/ettr-history", "alice", "", {{"since", "x"}}).status, 422);
  EXPECT_EQ(call("GET", "/api/v1/ettr-history", "alice", "", {{"until", "5"}}).status, 422);
  history.ettr_document = "{}";
  EXPECT_EQ(call("GET", "/api/v1/ettr-history", "alice").status, 502);
}

TEST_F(BridgeApiTest, FailoversShowEachUserTheirOwnJobsAndNeedTheController) {
  EXPECT_EQ(call("GET", "/api/v1/failovers", "alice").status, 503) << "no controller";
  FakeHistory history;
  api->set_controller_history(&history);
  EXPECT_EQ(call("GET", "/api/v1/failovers", "alice").status, 503) << "the controller does not answer";
  history.failover_document = R"({"items":[
    {"job_id":7,"submitted":1,"user_id":1001,"attempt":1,"class":"node_fault","evidence":"n1 SaFE: gpu0 ECC","bad_nodes":"n1",
     "phase":"done","workspace":"ml","gpus":8,"uses_retry":true,"fault_time":1800000000,"requeue_time":1800000002,
     "running_again_time":1800000004,"mttr_s":4},
    {"job_id":8,"submitted":1,"user_id":1002,"attempt":2,"class":"infra_transient","evidence":"x","bad_nodes":"",
     "phase":"waiting","workspace":"","gpus":0,"uses_retry":true,"fault_time":1800000100,"requeue_time":0,
     "running_again_time":0,"mttr_s":null}]})";
  auto alice = call("GET", "/api/v1/failovers", "alice", "", {{"since", "1799999999"}});
  ASSERT_EQ(alice.status, 200) << alice.body;
  EXPECT_EQ(history.since, 1799999999);
  EXPECT_NE(alice.body.find(R"("workloadId":"slurm-7","slurmJobId":7,"attempt":1,"class":"node_fault")"), std::string::npos) << alice.body;
  EXPECT_NE(alice.body.find(R"("faultTime":"2027-01-15T08:00:00Z","runningAgainTime":"2027-01-15T08:00:04Z","mttrSeconds":4)"),
            std::string::npos) << alice.body;
  EXPECT_EQ(alice.body.find("slurm-8"), std::string::npos) << "bob's failover: " << alice.body;
  auto root = call("GET", "/api/v1/failovers", "root");
  EXPECT_NE(root.body.find(R"("workloadId":"slurm-8")"), std::string::npos) << root.body;
  EXPECT_NE(root.body.find(R"("workspace":null)"), std::string::npos) << root.body;
  EXPECT_NE(root.body.find(R"("runningAgainTime":null,"mttrSeconds":null)"), std::string::npos) << root.body;
  EXPECT_EQ(call("GET", "/api/v1/failovers", "alice", "", {{"since", "yesterday"}}).status, 422);
  EXPECT_EQ(call("GET", "/api/v1/failovers", "alice", "", {{"limit", "5"}}).status, 422);
  history.failover_document = "[1,2]";
  EXPECT_EQ(call("GET", "/api/v1/failovers", "root").status, 502);
}

TEST_F(BridgeApiTest, ANodesFaultsAreEveryUsersToSee) {
  FakeHistory history;
  api->set_controller_history(&history);
  history.faults_document = R"({"items":[{"node":"n2","time":1800000000,"kind":"safe_drain","detail":"SaFE: gpu3 ECC"}]})";
  auto faults = call("GET", "/api/v1/nodes/n2/faults", "alice", "", {{"since", "5"}});
  ASSERT_EQ(faults.status, 200) << faults.body;
  EXPECT_EQ(history.node, "n2");
  EXPECT_EQ(history.since, 5);
  EXPECT_NE(faults.body.find(R"({"node":"n2","time":"2027-01-15T08:00:00Z","kind":"safe_drain","detail":"SaFE: gpu3 ECC"})"),
            std::string::npos) << faults.body;
  EXPECT_EQ(call("GET", "/api/v1/nodes/n9/faults", "alice").status, 404) << "no such node";
  EXPECT_EQ(call("GET", "/api/v1/nodes/n2/faults", "").status, 401);
}

TEST_F(BridgeApiTest, EventsIncludeSafedHistoryWhenItAnswers) {
  std::string id = created_id(call("POST", "/api/v1/workloads", "alice", kSpec));
  FakeHistory history;
  api->set_controller_history(&history);
  auto slurm_only = call("GET", "/api/v1/workloads/" + id + "/events", "alice");
  EXPECT_NE(slurm_only.body.find(R"("sources":"slurm")"), std::string::npos) << slurm_only.body;
  history.document = R"({"job_id":100,"attempts":[{"attempt":1,"nodes":"n2","start_time":1800000000,"end_time":1800000100,
    "end_state":"NODE_FAIL","class":"node_fault","rule":"node_down","evidence":"n2 DOWN"}],
    "failovers":[{"attempt":1,"class":"node_fault","evidence":"n2 DOWN","bad_nodes":"n2","phase":"running_again",
    "fault_time":1800000100,"mttr_s":4}],"actions":[]})";
  auto both = call("GET", "/api/v1/workloads/" + id + "/events", "alice");
  EXPECT_NE(both.body.find(R"("sources":"slurm,safed")"), std::string::npos) << both.body;
  EXPECT_NE(both.body.find("NODE_FAIL on n2; classified node_fault (node_down): n2 DOWN"), std::string::npos) << both.body;
  EXPECT_NE(both.body.find("node_fault on n2: running_again, running again after 4 s (n2 DOWN)"), std::string::npos) << both.body;
  history.document = "not safed";
  EXPECT_NE(call("GET", "/api/v1/workloads/" + id + "/events", "alice").body.find(R"("sources":"slurm")"), std::string::npos);
}

TEST(BridgeConfig, ControllerUrl) {
  EXPECT_TRUE(parse_config("kube_bridge:\n  controller_url: http://127.0.0.1:9810\n", "t").ok());
  EXPECT_TRUE(parse_config("kube_bridge:\n  controller_url: \"\"\n", "t").ok());
  EXPECT_FALSE(parse_config("kube_bridge:\n  controller_url: ftp://x\n", "t").ok());
}

TEST(OpenApi, DocumentsEveryRouteAndIsValidJson) {
  std::ifstream in(safe::test::source_path("docs/openapi.json"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), openapi_document()) << "the served document is docs/openapi.json";
  json_error_t err;
  json_t* doc = json_loads(text.str().c_str(), 0, &err);
  ASSERT_TRUE(doc) << err.text;
  json_t* paths = json_object_get(doc, "paths");
  for (const char* p : {"/api/v1/workloads", "/api/v1/workloads/{id}", "/api/v1/workloads/{id}/stop",
                        "/api/v1/workloads/{id}/logs", "/api/v1/workloads/{id}/events", "/api/v1/workloads/{id}/endpoints",
                        "/api/v1/workspaces",
                        "/api/v1/workspaces/{name}", "/api/v1/nodes", "/api/v1/nodes/{name}/faults", "/api/v1/failovers",
                        "/api/v1/ettr-history", "/api/v1/gpu-health",
                        "/healthz", "/metrics", "/openapi.json"})
    EXPECT_TRUE(json_object_get(paths, p)) << p;
  EXPECT_STREQ(json_string_value(json_object_get(doc, "openapi")), "3.0.3");
  json_decref(doc);
}

// Services through the API: the controller with the fake Slurm, probes answered by `healthy`.
class BridgeServiceTest : public BridgeApiTest {
 protected:
  BridgeServiceTest() { start_controller(); }
  void start_controller() {
    ServiceSettings settings;
    settings.state_dir = state.path() + "/bridge";
    auto prober = [this](const std::vector<ProbeRequest>& requests, std::chrono::milliseconds) {
      probed.insert(probed.end(), requests.begin(), requests.end());
      std::vector<ProbeResult> out;
      for (const auto& r : requests) {
        bool pass = r.path == "/alive" ? alive : healthy;
        out.push_back({pass, pass ? 200 : 0, "queue 1\n"});
      }
      return out;
    };
    controller.reset();
    controller = std::make_unique<ServiceController>(settings, slurm_cache, users, [](const std::string&, uid_t, std::size_t) {
      return Result<std::string>(Error{"no output"});
    }, prober, [this] { return now; });
    ASSERT_TRUE(controller->load());
    api->set_service_controller(controller.get());
  }
  // Passes until every replica has a job, Slurm running each on n1 as it comes.
  void start_replicas() {
    for (std::size_t before = ~std::size_t{0}; before != slurm.submitted.size();) {
      before = slurm.submitted.size();
      controller->pass();
      run_all();
    }
  }
  void run_all() {
    for (auto& j : slurm.jobs)
      if (j.state == SlurmJobState::pending) {
        j.state = SlurmJobState::running;
        j.batch_host = j.nodes = "n1";
      }
  }
  safe::test::TempDir state;
  bool healthy = true;
  bool alive = true;
  std::time_t now = 1000;
  std::vector<ProbeRequest> probed;
  std::unique_ptr<ServiceController> controller;
};

const char* kService = R"({"name":"web","kind":"service","command":["serve","--fast"],"port":8000,"replicas":2,
  "workspace":"ml","gpusPerNode":1,"readinessProbe":{"httpPath":"/healthz"}})";

TEST_F(BridgeServiceTest, AServiceRunsAJobPerReplicaAsItsUser) {
  ApiResponse r = call("POST", "/api/v1/workloads", "alice", kService);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(created_id(r), "svc-web");
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", kService).status, 409);
  start_replicas();
  ASSERT_EQ(slurm.submitted.size(), 2u);
  const SlurmJobRequest& job = slurm.submitted[1];
  EXPECT_EQ(job.uid, 1001u);
  EXPECT_EQ(job.name, "web-1");
  EXPECT_EQ(job.nodes, 1);
  EXPECT_EQ(job.gpus_per_node, 1);
  EXPECT_EQ(job.std_out, "/home/alice/safe-bridge/safe-bridge-web-r1-%j.out");
  auto has = [](const std::vector<std::string>& v, const std::string& e) { return std::find(v.begin(), v.end(), e) != v.end(); };
  EXPECT_TRUE(has(job.environment, "SAFE_REPLICA=1"));
  EXPECT_TRUE(has(job.environment, "SAFE_SERVICE_PORT=8001"));  // a port of its own: replicas may share a node
  EXPECT_TRUE(has(job.environment, "SAFE_SERVICE_NAME=web"));
  EXPECT_TRUE(has(job.spank_env, spank_env_name(SafeOption::retries) + "=0")) << "safed leaves replicas to the bridge";
  EXPECT_TRUE(has(job.spank_env, spank_env_name(SafeOption::workspace) + "=ml"));
  EXPECT_EQ(job.script, "#!/bin/bash\nexec 'serve' '--fast'\n");

  // The replicas' jobs are the service's: listed as one workload, not as slurm-N.
  controller->pass();
  ApiResponse list = call("GET", "/api/v1/workloads", "alice");
  EXPECT_NE(list.body.find(R"("total":1)"), std::string::npos) << list.body;
  EXPECT_EQ(call("GET", "/api/v1/workloads/slurm-100", "alice").status, 404);
  ApiResponse view = call("GET", "/api/v1/workloads/svc-web", "alice");
  EXPECT_NE(view.body.find(R"("phase":"Running")"), std::string::npos) << view.body;
  EXPECT_NE(view.body.find(R"("desired":2,"ready":2)"), std::string::npos) << view.body;
  ApiResponse endpoints = call("GET", "/api/v1/workloads/svc-web/endpoints", "alice");
  EXPECT_EQ(endpoints.status, 200);
  EXPECT_NE(endpoints.body.find(R"({"host":"n1","port":8000,"ready":true,"replica":0})"), std::string::npos) << endpoints.body;
  std::ifstream file(state.path() + "/bridge/endpoints/web.json");
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), endpoints.body);
  ASSERT_FALSE(probed.empty());
  EXPECT_EQ(probed.back().path, "/healthz");
  // Another user sees none of it; a training workload has no endpoints.
  EXPECT_EQ(call("GET", "/api/v1/workloads/svc-web", "bob").status, 404);
  EXPECT_EQ(call("GET", "/api/v1/workloads/svc-web/endpoints", "bob").status, 404);
  std::string metrics = call("GET", "/metrics", "").body;
  EXPECT_NE(metrics.find("safe_services{state=\"running\"} 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("safe_service_replicas{state=\"ready\"} 2\n"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find("web"), std::string::npos) << "no service's name on the open /metrics";
  std::string training = created_id(call("POST", "/api/v1/workloads", "alice", R"({"name":"t","script":"x"})"));
  EXPECT_EQ(call("GET", "/api/v1/workloads/" + training + "/endpoints", "alice").status, 404);
}

TEST_F(BridgeServiceTest, ARestartedBridgeAdoptsTheReplicasItKept) {
  ASSERT_EQ(call("POST", "/api/v1/workloads", "alice", kService).status, 201);
  start_replicas();
  controller->pass();
  start_controller();  // the bridge restarted: the state directory holds the service
  controller->pass();
  EXPECT_EQ(slurm.submitted.size(), 2u) << "no replica started twice";
  EXPECT_NE(call("GET", "/api/v1/workloads/svc-web", "alice").body.find(R"("ready":2)"), std::string::npos);
}

TEST_F(BridgeServiceTest, StopAndDeleteLeaveNoJobAndNoFile) {
  ASSERT_EQ(call("POST", "/api/v1/workloads", "alice", kService).status, 201);
  start_replicas();
  ApiResponse stopped = call("POST", "/api/v1/workloads/svc-web/stop", "alice");
  EXPECT_EQ(stopped.status, 202);
  EXPECT_NE(stopped.body.find(R"("phase":"Stopped")"), std::string::npos);
  for (const auto& j : slurm.jobs) EXPECT_EQ(j.state, SlurmJobState::cancelled) << j.id;
  controller->pass();
  EXPECT_EQ(slurm.submitted.size(), 2u);
  EXPECT_EQ(call("DELETE", "/api/v1/workloads/svc-web", "alice").status, 200);
  EXPECT_EQ(call("GET", "/api/v1/workloads/svc-web", "alice").status, 404);
  EXPECT_TRUE(std::filesystem::exists(state.path() + "/bridge/services/web.json")) << "kept until the next pass sees no job";
  controller->pass();
  EXPECT_FALSE(std::filesystem::exists(state.path() + "/bridge/services/web.json"));
  EXPECT_FALSE(std::filesystem::exists(state.path() + "/bridge/endpoints/web.json"));
}

TEST_F(BridgeServiceTest, AServiceTheWorkspacePolicyRefusesIsRefusedAtOnce) {
  ApiResponse r = call("POST", "/api/v1/workloads", "bob", kService);  // bob is no member of ml
  EXPECT_EQ(r.status, 403) << r.body;
  controller->pass();
  EXPECT_TRUE(slurm.submitted.empty());
}

TEST_F(BridgeServiceTest, AJobWearingAnotherUsersServiceMarkIsNotTakenForAReplica) {
  ASSERT_EQ(call("POST", "/api/v1/workloads", "alice", R"({"name":"web","kind":"service","script":"x","port":8000})").status, 201);
  SlurmJob forged;
  forged.id = 50;
  forged.user_id = 1002;  // bob: sbatch --comment with the bridge's mark
  forged.state = SlurmJobState::running;
  forged.comment = std::string(kBridgeCommentPrefix) + R"({"labels":{},"service":"web","replica":0})";
  slurm.jobs.push_back(forged);
  controller->pass();
  EXPECT_EQ(slurm.jobs[0].state, SlurmJobState::running) << "bob's job was cancelled";
  EXPECT_EQ(slurm.submitted.size(), 1u) << "alice's replica was not started";
}

TEST_F(BridgeServiceTest, LivenessFailuresCountOnlyOnceTheProbeHasPassed) {
  ASSERT_EQ(call("POST", "/api/v1/workloads", "alice",
                 R"({"name":"slow","kind":"service","script":"x","port":8000,"livenessProbe":{"httpPath":"/alive"}})").status, 201);
  controller->pass();
  run_all();
  alive = false;  // still loading its model
  for (int i = 0; i < 10; ++i, ++now) controller->pass();
  EXPECT_EQ(slurm.jobs[0].state, SlurmJobState::running) << "killed while it started";
  alive = true;
  controller->pass();
  alive = false;  // now it hangs
  for (int i = 0; i < 3; ++i, ++now) controller->pass();
  EXPECT_EQ(slurm.jobs[0].state, SlurmJobState::cancelled);
}

TEST_F(BridgeServiceTest, AUsersServicesHaveACapAndNamesAreTakenUntilTheDeletedJobsEnd) {
  ASSERT_EQ(call("POST", "/api/v1/workloads", "alice", kService).status, 201);
  start_replicas();
  slurm.cancel_ignored = true;  // Slurm does not take the cancels (a slurmctld blip)
  EXPECT_EQ(call("DELETE", "/api/v1/workloads/svc-web", "alice").status, 200);
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", kService).status, 409) << "while its jobs run on";
  slurm.cancel_ignored = false;
  controller->pass();  // cancels them again
  for (const auto& j : slurm.jobs) EXPECT_EQ(j.state, SlurmJobState::cancelled) << j.id;
  controller->pass();
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", kService).status, 201);
  for (int i = 0; i < 40; ++i) call("POST", "/api/v1/workloads", "alice", R"({"name":"s)" + std::to_string(i) + R"(","kind":"service","script":"x","port":9000})");
  ApiResponse over = call("POST", "/api/v1/workloads", "alice", R"({"name":"one-more","kind":"service","script":"x","port":9000})");
  EXPECT_EQ(over.status, 422);
  EXPECT_NE(over.body.find("the most one user may have"), std::string::npos) << over.body;
}

TEST_F(BridgeServiceTest, ARecordThatDoesNotReadKeepsItsNameAndAStateDirOthersCanWriteIsRefused) {
  {
    std::ofstream bad(state.path() + "/bridge/services/broken.json");
    bad << "{not json";
  }
  start_controller();
  EXPECT_EQ(call("POST", "/api/v1/workloads", "alice", R"({"name":"broken","kind":"service","script":"x","port":8000})").status, 409);
  EXPECT_EQ(std::filesystem::status(state.path() + "/bridge/services").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
  std::filesystem::permissions(state.path() + "/bridge", std::filesystem::perms::others_write, std::filesystem::perm_options::add);
  ServiceSettings settings;
  settings.state_dir = state.path() + "/bridge";
  ServiceController other(settings, slurm_cache, users, read_user_file_tail);
  Status loaded = other.load();
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().find("writable by no one else"), std::string::npos) << loaded.error();
}

TEST_F(BridgeApiTest, WithoutAStateDirectoryServicesAreRefused) {
  ApiResponse r = call("POST", "/api/v1/workloads", "alice", R"({"name":"web","kind":"service","script":"x","port":8000})");
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("services are off on this bridge"), std::string::npos) << r.body;
}

}  // namespace
}  // namespace safe::bridge
