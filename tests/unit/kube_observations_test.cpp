// The Kubernetes target's parsers against fixtures in the API server's own format
// (tests/fixtures/kube/): what the bridge reads of pods, nodes, Jobs, watch streams and SaFE's
// Jobs at recovery.
#include "kube-bridge/kube_observations.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/json_value.hpp"
#include "kube-bridge/kube_manifests.hpp"
#include "tests/kube/sample_workload.hpp"
#include "tests/unit/source_path.hpp"

namespace safe::bridge {
namespace {

std::string fixture(const std::string& name) {
  std::ifstream in(safe::test::source_path("tests/fixtures/kube/" + name));
  std::stringstream s;
  s << in.rdbuf();
  if (s.str().empty()) ADD_FAILURE() << "missing fixture " << name;
  return s.str();
}

TEST(KubeObservations, PodsOfAnAttempt) {
  auto pods = parse_pod_list(fixture("pods-attempt.json"));
  ASSERT_TRUE(pods) << pods.error();
  ASSERT_EQ(4u, pods->size());
  const PodObservation& running = (*pods)[0];
  EXPECT_EQ("train-a1-0-x7k2p", running.name);
  EXPECT_EQ("k1", running.node);
  EXPECT_EQ("Running", running.phase);
  EXPECT_FALSE(running.exit_code);
  EXPECT_FALSE(running.disruption);
  const PodObservation& failed = (*pods)[1];
  EXPECT_EQ("Failed", failed.phase);
  EXPECT_EQ(137, failed.exit_code);
  EXPECT_EQ("OOMKilled", failed.termination_reason);
  EXPECT_EQ("2026-12-01T10:05:00Z", failed.finished_at);
  EXPECT_EQ("DeletionByTaintManager", failed.disruption.value_or("none"));
  EXPECT_EQ("", (*pods)[2].node) << "unscheduled";
  EXPECT_FALSE((*pods)[2].disruption) << "a DisruptionTarget that is False is no disruption";
  EXPECT_FALSE(parse_pod_list(R"({"kind":"Status","code":500})")) << "not a list: no pods, an error";
  EXPECT_FALSE(parse_pod_list("<html>"));
}

TEST(KubeObservations, NodesReadinessAndSafesMarkHaveOneMeaning) {
  auto nodes = parse_kube_node_list(fixture("nodes.json"));
  ASSERT_TRUE(nodes) << nodes.error();
  ASSERT_EQ(4u, nodes->size());
  EXPECT_EQ("k1", (*nodes)[0].name);
  EXPECT_EQ(true, (*nodes)[0].ready);
  EXPECT_FALSE((*nodes)[0].mark);
  EXPECT_EQ(false, (*nodes)[1].ready);
  EXPECT_EQ("node_fault", (*nodes)[1].mark.value_or("none")) << "the label wins over the taint";
  EXPECT_EQ(false, (*nodes)[2].ready) << "Unknown is not Ready";
  EXPECT_EQ("xid_79", (*nodes)[2].mark.value_or("none")) << "the taint, without a label";
  EXPECT_FALSE((*nodes)[3].ready.has_value()) << "no Ready condition reported";
  // A single Node object reads the same as one in a list.
  Json list = json_take(json_loads(fixture("nodes.json").c_str(), 0, nullptr));
  KubeNodeState k3 = parse_kube_node(json_text(json_array_get(json_object_get(list.get(), "items"), 2)));
  EXPECT_EQ("k3", k3.name);
  EXPECT_EQ("xid_79", k3.mark.value_or("none"));
}

TEST(KubeObservations, PodsLearnTheirNodesState) {
  auto pods = parse_pod_list(fixture("pods-attempt.json"));
  ASSERT_TRUE(pods);
  auto nodes = parse_kube_node_list(fixture("nodes.json"));
  ASSERT_TRUE(nodes);
  std::map<std::string, KubeNodeState> by_name;
  for (const auto& n : *nodes)
    if (n.name != "k3") by_name[n.name] = n;  // k3 is gone
  add_node_states(*pods, by_name);
  EXPECT_FALSE((*pods)[0].node_not_ready);
  EXPECT_FALSE((*pods)[0].node_mark);
  EXPECT_TRUE((*pods)[1].node_not_ready);
  EXPECT_EQ("node_fault", (*pods)[1].node_mark.value_or("none"));
  EXPECT_FALSE((*pods)[2].node_not_ready) << "unscheduled: no node to blame";
  EXPECT_TRUE((*pods)[3].node_not_ready) << "a node that is gone took its pods with it";
  by_name["k3"] = {"k3", std::nullopt, std::nullopt};
  add_node_states(*pods, by_name);
  EXPECT_FALSE((*pods)[3].node_not_ready) << "a node without a Ready condition is not known to be down";
}

TEST(KubeObservations, TheAttemptsJob) {
  JobObservation seen = parse_job_observation(200, fixture("job-deadline.json"));
  EXPECT_TRUE(seen.deadline_exceeded);
  EXPECT_FALSE(seen.gone);
  EXPECT_TRUE(job_is_suspended(fixture("job-deadline.json")));
  EXPECT_TRUE(parse_job_observation(404, R"({"kind":"Status","code":404})").gone);
  JobObservation plain = parse_job_observation(200, R"({"kind":"Job","status":{"conditions":[
    {"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}})");
  EXPECT_FALSE(plain.deadline_exceeded);
  EXPECT_FALSE(job_is_suspended(R"({"kind":"Job","spec":{"suspend":false}})"));
}

// A Job create answered 409: the existing Job counts as made only if it is that attempt's.
TEST(KubeObservations, AnExistingJobIsTheAttemptsOnlyByItsLabels) {
  const char* job = R"({"kind":"Job","metadata":{"name":"w-a2","labels":{
    "safe-for-slurm.io/workload":"w","safe-for-slurm.io/attempt":"2"}}})";
  EXPECT_TRUE(job_is_attempt(job, "w", 2));
  EXPECT_FALSE(job_is_attempt(job, "w", 3));
  EXPECT_FALSE(job_is_attempt(job, "v", 2));
  EXPECT_FALSE(job_is_attempt(R"({"kind":"Job","metadata":{"name":"w-a2"}})", "w", 2)) << "someone else's Job";
  EXPECT_FALSE(job_is_attempt("not json", "w", 2));
}

TEST(KubeObservations, LogPodAndRunningPods) {
  std::string list = fixture("pods-attempt.json");
  EXPECT_EQ("train-a1-1-q9w3e", log_pod(list)) << "completion index 0";
  EXPECT_EQ("only", log_pod(R"({"items":[{"metadata":{"name":"only"}}]})")) << "no index: the first pod";
  EXPECT_EQ("", log_pod(R"({"items":[]})"));
  EXPECT_EQ(std::vector<std::string>{"train-a1-0-x7k2p"}, running_pods(list)) << "not the one being deleted";
  EXPECT_EQ("4711", list_resource_version(list));
}

TEST(KubeObservations, WatchStreamLines) {
  std::istringstream lines(fixture("watch-events.jsonl"));
  std::vector<KubeWatchEvent> events;
  for (std::string line; std::getline(lines, line);) events.push_back(parse_watch_event(line));
  ASSERT_EQ(4u, events.size());
  EXPECT_EQ("MODIFIED", events[0].type);
  EXPECT_EQ("4720", events[0].resource_version);
  EXPECT_EQ("train", events[0].workload);
  EXPECT_EQ("BOOKMARK", events[1].type);
  EXPECT_EQ("4800", events[1].resource_version);
  EXPECT_EQ("", events[1].workload);
  EXPECT_EQ("ERROR", events[2].type);
  EXPECT_TRUE(events[2].expired);
  EXPECT_FALSE(events[3].expired) << "an ERROR that is not 410 does not call for a new list";
  EXPECT_EQ("", parse_watch_event("not json").type);
}

// A JobList as the API server answers the bridge's recovery: workload "train" mid-failover
// (attempt 3 starting, its record still on attempt 2's Job), with attempt 1's Job left over; a
// Job whose record this bridge cannot read; a Job without SaFE's labels.
TEST(KubeObservations, RecoveryTakesTheRecordFromTheJobHoldingIt) {
  KubeWorkload w;
  w.spec = samples::spec();
  w.user = "alice";
  w.uid = 1001;
  w.attempt = 3;
  w.draining_attempt = 2;
  w.drain_deadline = 1000;
  KubeWorkload stale = w;
  stale.attempt = 1;
  stale.draining_attempt = 0;
  auto job = [](const std::string& name, int attempt, const std::string& record) {
    return R"({"metadata":{"name":")" + name + R"(","labels":{"safe-for-slurm.io/workload":"train",)" +
           R"("safe-for-slurm.io/attempt":")" + std::to_string(attempt) + R"("},"annotations":{")" +
           std::string(kRecordAnnotation) + R"(":)" + json_dump(json_take(json_str(record)).get(), JSON_ENCODE_ANY) +
           "}}}";
  };
  std::string body = R"({"kind":"JobList","items":[)" + job("train-a1", 1, kube_workload_record(stale)) + "," +
                     job("train-a2", 2, kube_workload_record(w)) + "," + job("train-a3", 3, "{not a record") + "," +
                     R"({"metadata":{"name":"someone-elses"}}]})";
  auto found = parse_recovered_workloads(body);
  ASSERT_TRUE(found) << found.error();
  ASSERT_EQ(1u, found->workloads.size());
  EXPECT_EQ(3, found->workloads.at("train").attempt);
  EXPECT_EQ(2, found->workloads.at("train").draining_attempt);
  EXPECT_EQ((std::vector<int>{1, 2, 3}), found->attempts.at("train"));
  ASSERT_EQ(1u, found->unusable.size());
  EXPECT_NE(std::string::npos, found->unusable[0].find("Job train-a3: ")) << found->unusable[0];
  EXPECT_FALSE(parse_recovered_workloads(R"({"kind":"Status","message":"forbidden"})"));
}

TEST(KubeObservations, StatusMessage) {
  EXPECT_EQ("jobs.batch \"x\" not found", kube_status_message(R"({"kind":"Status","message":"jobs.batch \"x\" not found"})"));
  EXPECT_EQ("", kube_status_message("gateway timeout"));
}

}  // namespace
}  // namespace safe::bridge
