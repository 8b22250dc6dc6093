// The Kubernetes target's state machine against a scripted API (fake_kube_client.hpp) and a test
// clock: each test is one story, checked through the requests the target makes and the workload
// it shows. The bridge against the Kubernetes API double is tests/integration/bridge_kube.sh.
#include "kube-bridge/kube_target.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "common/json_value.hpp"
#include "kube-bridge/kube_manifests.hpp"
#include "kube-bridge/kube_workload_target.hpp"
#include "tests/kube/sample_workload.hpp"
#include "tests/unit/fake_kube_client.hpp"

namespace safe::bridge {
namespace {

using testing::FakeKubeClient;

const std::string kPods = "/api/v1/namespaces/safe/pods?labelSelector=";
const std::string kJobs = "/apis/batch/v1/namespaces/safe/jobs";
const std::string kServices = "/api/v1/namespaces/safe/services";

struct Pod {
  std::string name, node, phase;
};

std::string pod_list(const std::vector<Pod>& pods) {
  std::string items;
  for (const Pod& p : pods)
    items += std::string(items.empty() ? "" : ",") + R"({"metadata":{"name":")" + p.name + R"("},"spec":{"nodeName":")" + p.node +
             R"("},"status":{"phase":")" + p.phase + R"("}})";
  return R"({"kind":"PodList","items":[)" + items + "]}";
}

std::string node(const std::string& name, bool ready) {
  return R"({"kind":"Node","metadata":{"name":")" + name + R"("},"status":{"conditions":[{"type":"Ready","status":")" +
         (ready ? "True" : "False") + R"("}]}})";
}

class KubeTargetTest : public ::testing::Test {
 protected:
  KubeTargetTest() {
    config.kube_bridge.kubernetes.namespace_ = "safe";
    kube.answer("GET", kJobs + "?labelSelector=", 200, R"({"kind":"JobList","items":[]})");
    kube.answer("POST", kServices, 201);
    kube.answer("POST", kJobs, 201);
    kube.answer("PATCH", kJobs + "/", 200);
    kube.answer("DELETE", kJobs + "/", 200);
    kube.answer("DELETE", kServices + "/", 200);
    kube.answer("GET", "/api/v1/nodes/k1", 200, node("k1", true));
    kube.answer("GET", "/api/v1/nodes/k2", 200, node("k2", true));
    kube.answer("PATCH", "/api/v1/nodes/", 200);
    kube.answer("GET", kJobs + "/train-a", 200, R"({"kind":"Job","spec":{}})");
    target = std::make_unique<KubeTarget>(config, kube, [this] { return now; });
    EXPECT_TRUE(target->recover().ok());
    settings.retries = 2;
    settings.ckpt_signal = {10, 30};
    auto refused = target->create(samples::spec(), settings, "alice", 1001, 1001);
    EXPECT_FALSE(refused) << refused->message;
  }

  KubeWorkload workload() {
    auto w = target->get("train");
    if (!w) ADD_FAILURE() << "no workload train";
    return w.value_or(KubeWorkload{});
  }

  SafeConfig config;
  FakeKubeClient kube;
  JobSettings settings;
  std::time_t now = 1000;
  std::unique_ptr<KubeTarget> target;
};

TEST_F(KubeTargetTest, ANodeGoingNotReadyFailsTheWorkloadOverAwayFromIt) {
  auto first = kube.calls("POST", kJobs);
  ASSERT_EQ(1u, first.size());
  EXPECT_EQ(std::string::npos, first[0].body.find(R"("NotIn")")) << "no node to avoid yet";
  EXPECT_EQ(1000, workload().submit_time) << "the target's clock";
  kube.answer("GET", kPods, 200, pod_list({{"train-a1-0", "k1", "Running"}, {"train-a1-1", "k2", "Running"}}));
  target->reconcile("train");
  EXPECT_EQ(WorkloadPhase::running, workload().phase);
  EXPECT_EQ("k1,k2", workload().nodes);

  // k2 stops being Ready: the attempt's Job is suspended (its pods get the checkpoint signal),
  // k2 is marked, and the next attempt waits for the old pods or the lead time (30 s).
  kube.answer("GET", "/api/v1/nodes/k2", 200, node("k2", false));
  kube.forget_calls();
  now = 1010;
  target->reconcile("train");
  KubeWorkload w = workload();
  EXPECT_EQ(2, w.attempt);
  EXPECT_EQ(1, w.draining_attempt);
  EXPECT_EQ(1040, w.drain_deadline);
  EXPECT_EQ(WorkloadPhase::pending, w.phase);
  EXPECT_EQ(std::vector<std::string>{"k2"}, w.avoid_nodes);
  ASSERT_EQ(1u, kube.calls("PATCH", "/api/v1/nodes/k2").size()) << "marked unhealthy";
  auto suspended = kube.calls("PATCH", kJobs + "/train-a1");
  ASSERT_EQ(1u, suspended.size());
  EXPECT_NE(std::string::npos, suspended[0].body.find(R"("suspend":true)")) << suspended[0].body;
  EXPECT_TRUE(kube.calls("POST", kJobs).empty()) << "the old pods still run and the lead time is not over";

  // The old pod on the dead node never reports back: at the deadline the next attempt starts
  // without k2, and attempt 1's Job and Service go.
  now = 1039;
  target->reconcile("train");
  EXPECT_TRUE(kube.calls("POST", kJobs).empty());
  now = 1040;
  target->reconcile("train");
  auto created = kube.calls("POST", kJobs);
  ASSERT_EQ(1u, created.size());
  EXPECT_NE(std::string::npos, created[0].body.find(R"("name":"train-a2")")) << created[0].body;
  EXPECT_NE(std::string::npos, created[0].body.find(R"("NotIn")")) << "k2 is avoided: " << created[0].body;
  EXPECT_EQ(1u, kube.calls("DELETE", kJobs + "/train-a1?propagationPolicy=Background").size());
  EXPECT_EQ(1u, kube.calls("DELETE", kServices + "/train-a1").size());
  w = workload();
  EXPECT_EQ(0, w.draining_attempt);
  ASSERT_FALSE(w.events.empty());
  EXPECT_EQ("Failover", w.events.back().type);
  EXPECT_EQ(1010, w.events.back().time);
}

TEST_F(KubeTargetTest, RestReadsDoNotWaitForASlowApiServer) {
  kube.hold(kPods);
  std::thread reconciling([this] { target->reconcile("train"); });
  kube.wait_held();  // the reconcile is inside a request to the API server
  auto read = std::async(std::launch::async, [this] { return target->get("train").has_value() && target->list().size() == 1; });
  bool answered = read.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  kube.release();
  reconciling.join();
  EXPECT_TRUE(answered) << "get() and list() waited for the API server";
  EXPECT_TRUE(read.get());
}

TEST_F(KubeTargetTest, AStopWhoseAnswerIsLostIsCheckedOnTheJob) {
  kube.answer("PATCH", kJobs + "/train-a1", 0);  // the answer is lost
  kube.answer("GET", kJobs + "/train-a1", 200, R"({"kind":"Job","spec":{"suspend":false}})");
  Status stopped = target->stop("train", false);
  ASSERT_FALSE(stopped);
  EXPECT_NE(std::string::npos, stopped.error().find("cannot suspend the workload's Job")) << stopped.error();
  EXPECT_EQ(WorkloadPhase::pending, workload().phase) << "it runs on, and the caller is told why";

  kube.answer("GET", kJobs + "/train-a1", 200, R"({"kind":"Job","spec":{"suspend":true}})");  // it was applied
  EXPECT_TRUE(target->stop("train", false).ok());
  EXPECT_EQ(WorkloadPhase::stopped, workload().phase);
  EXPECT_EQ("Stopped", workload().events.back().type);

  EXPECT_FALSE(target->stop("nothing", false)) << "no such workload";
  EXPECT_TRUE(target->stop("train", true).ok());
  EXPECT_FALSE(target->get("train"));
  EXPECT_EQ(1u, kube.calls("DELETE", kJobs + "/train-a1").size());
}

// The REST API's log request on Kubernetes: the pod of completion index 0 of the attempt asked
// for, cut to tailBytes as on Slurm.
TEST_F(KubeTargetTest, LogsHonourAttemptAndTailBytes) {
  KubeWorkloadTarget workloads(*target);
  auto found = workloads.find("kube-train");
  ASSERT_TRUE(found && *found);
  kube.answer("GET", kPods, 200, pod_list({{"train-a1-0", "k1", "Running"}}));
  kube.answer("GET", "/api/v1/namespaces/safe/pods/train-a1-0/log", 200, "step 1\nstep 2\n");
  auto whole = workloads.logs(**found, {0, kDefaultLogBytes});
  ASSERT_TRUE(whole) << whole.error();
  EXPECT_EQ("step 1\nstep 2\n", whole->text);
  auto tail = workloads.logs(**found, {1, 7});
  ASSERT_TRUE(tail) << tail.error();
  EXPECT_EQ("step 2\n", tail->text);
  auto unrun = workloads.logs(**found, {2, kDefaultLogBytes});
  ASSERT_FALSE(unrun);
  EXPECT_EQ("safe: no logs: attempt 2 has not run", unrun.error());
}

TEST_F(KubeTargetTest, ANameIsTakenOnceAndRootIsRefused) {
  auto again = target->create(samples::spec(), settings, "alice", 1001, 1001);
  ASSERT_TRUE(again);
  EXPECT_EQ(409, again->status);
  WorkloadSpec other = samples::spec();
  other.name = "other";
  auto root = target->create(other, settings, "root", 0, 0);
  ASSERT_TRUE(root);
  EXPECT_EQ(403, root->status);
  kube.answer("POST", kJobs, 403, R"({"kind":"Status","message":"jobs.batch is forbidden"})");
  auto refused = target->create(other, settings, "alice", 1001, 1001);
  ASSERT_TRUE(refused);
  EXPECT_EQ(502, refused->status);
  EXPECT_NE(std::string::npos, refused->message.find("HTTP 403: jobs.batch is forbidden")) << refused->message;
  EXPECT_FALSE(target->get("other")) << "a workload the API server refused does not exist";
}

TEST_F(KubeTargetTest, RecoveryDeletesTheJobsOfAttemptsTheRecordMovedPast) {
  KubeWorkload w = workload();
  w.attempt = 2;
  KubeWorkload old = w;
  old.attempt = 1;
  auto job = [](int attempt, const KubeWorkload& record) {
    return R"({"metadata":{"name":"train-a)" + std::to_string(attempt) +
           R"(","labels":{"safe-for-slurm.io/workload":"train","safe-for-slurm.io/attempt":")" +
           std::to_string(attempt) + R"("},"annotations":{")" + std::string(kRecordAnnotation) +
           R"(":)" + json_dump(json_take(json_str(kube_workload_record(record))).get(), JSON_ENCODE_ANY) + "}}}";
  };
  kube.answer("GET", kJobs + "?labelSelector=", 200,
              R"({"kind":"JobList","items":[)" + job(1, old) + "," + job(2, w) + "]}");
  kube.forget_calls();
  KubeTarget restarted(config, kube, [this] { return now; });
  ASSERT_TRUE(restarted.recover().ok());
  EXPECT_TRUE(restarted.recovered());
  ASSERT_TRUE(restarted.get("train"));
  EXPECT_EQ(2, restarted.get("train")->attempt);
  EXPECT_EQ(1u, kube.calls("DELETE", kJobs + "/train-a1").size());
  EXPECT_EQ(1u, kube.calls("DELETE", kServices + "/train-a1").size());
  EXPECT_TRUE(kube.calls("DELETE", kJobs + "/train-a2").empty());

  kube.answer("GET", kJobs + "?labelSelector=", 403, R"({"kind":"Status","message":"forbidden"})");
  KubeTarget refused(config, kube, [this] { return now; });
  Status recovered = refused.recover();
  ASSERT_FALSE(recovered);
  EXPECT_EQ("listing SaFE's Jobs: HTTP 403: forbidden", recovered.error());
  EXPECT_EQ(503, refused.create(samples::spec(), settings, "alice", 1001, 1001)->status);
}

}  // namespace
}  // namespace safe::bridge
