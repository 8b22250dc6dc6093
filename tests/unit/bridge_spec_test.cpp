// The REST bridge's workload spec: every field's validation, messages shared with the CLI.
#include <gtest/gtest.h>

#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {
namespace {

std::vector<FieldError> errors_of(const std::string& body) { return parse_workload_spec(body).errors; }

TEST(WorkloadSpec, FullSpecParses) {
  SpecParse p = parse_workload_spec(R"({"name":"train-1","workspace":"ml","target":"kubernetes","image":"rocm/pytorch:latest",
    "command":["python","train.py"],"nodes":4,"gpusPerNode":8,"cpusPerTask":16,"memory":"64G","timeLimit":120,
    "retries":3,"checkpoint":{"dir":"/ckpt/run1","signal":"USR2","graceSeconds":60},"health":"strict",
    "hangTimeout":1200,"env":{"A":"1"},"excludedNodes":["n3"],"labels":{"team":"llm"}})");
  ASSERT_TRUE(p.spec) << (p.errors.empty() ? "" : p.errors[0].path + ": " + p.errors[0].message);
  const WorkloadSpec& s = *p.spec;
  EXPECT_EQ(s.name, "train-1");
  EXPECT_EQ(s.target, TargetKind::kubernetes);
  EXPECT_EQ(s.nodes, 4);
  EXPECT_EQ(s.gpus_per_node, 8);
  EXPECT_EQ(s.memory_mb, 64 * 1024);
  EXPECT_EQ(s.options.workspace, "ml");
  EXPECT_EQ(s.options.retries, 3);
  EXPECT_EQ(s.options.ckpt_dir, "/ckpt/run1");
  EXPECT_EQ(s.options.ckpt_signal->to_string(), "USR2@60");
  EXPECT_EQ(s.options.health, HealthLevel::strict);
  EXPECT_EQ(s.options.hang_timeout, 1200);
  EXPECT_EQ(s.env.at(0), (std::pair<std::string, std::string>{"A", "1"}));
  EXPECT_EQ(s.labels.at("team"), "llm");
}

TEST(WorkloadSpec, MinimalSpecTakesDefaults) {
  SpecParse p = parse_workload_spec(R"({"name":"a","script":"echo hi"})");
  ASSERT_TRUE(p.spec);
  EXPECT_EQ(p.spec->target, TargetKind::slurm);
  EXPECT_EQ(p.spec->nodes, 1);
  EXPECT_FALSE(p.spec->options.any());
}

struct BadCase {
  const char* body;
  const char* path;
  const char* message_part;
};

class WorkloadSpecErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(WorkloadSpecErrors, ReportsFieldAndReason) {
  const BadCase& c = GetParam();
  auto errors = errors_of(c.body);
  bool found = false;
  for (const auto& e : errors) found = found || (e.path == c.path && e.message.find(c.message_part) != std::string::npos);
  std::string all;
  for (const auto& e : errors) all += e.path + ": " + e.message + "\n";
  EXPECT_TRUE(found) << c.body << "\nexpected " << c.path << ": ..." << c.message_part << "...\ngot:\n" << all;
}

INSTANTIATE_TEST_SUITE_P(
    Fields, WorkloadSpecErrors,
    ::testing::Values(
        BadCase{R"({"script":"x"})", "name", "is required"},
        BadCase{R"({"name":"Bad_Name","script":"x"})", "name", "lower-case"},
        BadCase{R"({"name":7,"script":"x"})", "name", "expects a string"},
        BadCase{R"({"name":"a"})", "command", "give command"},
        BadCase{R"({"name":"a","command":["x"],"script":"y"})", "command", "not both"},
        BadCase{R"({"name":"a","command":[]})", "command", "non-empty array"},
        BadCase{R"({"name":"a","command":["x",3]})", "command[1]", "expects a string"},
        BadCase{R"({"name":"a","script":""})", "script", "non-empty"},
        BadCase{R"({"name":"a","script":"x","target":"mesos"})", "target", "slurm or kubernetes"},
        BadCase{R"({"name":"a","script":"x","target":"kubernetes"})", "image", "required for target kubernetes"},
        BadCase{R"({"name":"a","script":"x","image":"a b"})", "image", "container image"},
        BadCase{R"({"name":"a","script":"x","nodes":0})", "nodes", "1..1024"},
        BadCase{R"({"name":"a","script":"x","nodes":"2"})", "nodes", "integer"},
        BadCase{R"({"name":"a","script":"x","nodes":1.5})", "nodes", "integer"},
        BadCase{R"({"name":"a","script":"x","gpusPerNode":65})", "gpusPerNode", "0..64"},
        BadCase{R"({"name":"a","script":"x","cpusPerTask":0})", "cpusPerTask", "1..1024"},
        BadCase{R"({"name":"a","script":"x","memory":"12X"})", "memory", "size per node"},
        BadCase{R"({"name":"a","script":"x","timeLimit":-1})", "timeLimit", "integer"},
        // The SaFE options: the CLI's own messages.
        BadCase{R"({"name":"a","script":"x","workspace":"no/pe"})", "workspace", "safe: --safe-workspace expects a workspace name"},
        BadCase{R"({"name":"a","script":"x","retries":51})", "retries", "safe: --safe-retries expects an integer 0..50, got '51'"},
        BadCase{R"({"name":"a","script":"x","retries":"3"})", "retries", "expects an integer"},
        BadCase{R"({"name":"a","script":"x","health":"max"})", "health", "safe: --safe-health expects strict, standard or off"},
        BadCase{R"({"name":"a","script":"x","hangTimeout":999999999})", "hangTimeout", "safe: --safe-hang-timeout expects seconds"},
        BadCase{R"({"name":"a","script":"x","nodes":4,"minNodes":0})", "minNodes", "safe: --safe-min-nodes expects a node count"},
        BadCase{R"({"name":"a","script":"x","nodes":4,"minNodes":5})", "minNodes", "at most the workload's nodes (4)"},
        BadCase{R"({"name":"a","script":"x","nodes":4,"nodeMultiple":2})", "nodeMultiple", "only applies with minNodes"},
        BadCase{R"({"name":"a","script":"x","nodes":4,"minNodes":2,"nodeMultiple":3})", "nodeMultiple", "must divide"},
        BadCase{R"({"name":"a","target":"kubernetes","image":"i","command":["x"],"nodes":4,"minNodes":2})", "minNodes",
                "the Kubernetes target runs a workload at its full size only"},
        BadCase{R"({"name":"a","script":"x","checkpoint":{"dir":"rel/dir"}})", "checkpoint.dir", "safe: --safe-ckpt-dir expects an absolute path"},
        BadCase{R"({"name":"a","script":"x","checkpoint":{"dir":"/ckpt/../etc"}})", "checkpoint.dir", "without '..'"},
        BadCase{R"({"name":"a","script":"x","checkpoint":{"signal":"KILL"}})", "checkpoint.signal", "catchable signal"},
        BadCase{R"({"name":"a","script":"x","checkpoint":{"signal":"USR1@5"}})", "checkpoint.signal", "graceSeconds"},
        BadCase{R"({"name":"a","script":"x","checkpoint":{"graceSeconds":70000}})", "checkpoint.graceSeconds", "0..65535"},
        BadCase{R"({"name":"a","script":"x","checkpoint":{"when":1}})", "checkpoint.when", "unknown field"},
        BadCase{R"({"name":"a","script":"x","checkpoint":"/ckpt"})", "checkpoint", "expects an object"},
        BadCase{R"({"name":"a","script":"x","env":{"SAFE_ATTEMPT":"9"}})", "env.SAFE_ATTEMPT", "set by SaFE"},
        BadCase{R"({"name":"a","script":"x","env":{"1X":"9"}})", "env.1X", "variable name"},
        BadCase{R"({"name":"a","script":"x","env":{"X":9}})", "env.X", "expects a string"},
        BadCase{R"({"name":"a","script":"x","excludedNodes":["n1;rm"]})", "excludedNodes[0]", "node name"},
        BadCase{R"({"name":"a","script":"x","labels":{"-bad":"x"}})", "labels.-bad", "label key"},
        BadCase{R"({"name":"a","script":"x","labels":{"k":"v w"}})", "labels.k", "label value"},
        BadCase{R"({"name":"a","script":"x","colour":"red"})", "colour", "unknown field"},
        // Services.
        BadCase{R"({"name":"a","script":"x","kind":"daemon"})", "kind", "training or service"},
        BadCase{R"({"name":"a","script":"x","kind":"service"})", "port", "is required for kind service"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":80})", "port", "1024..65535"},
        BadCase{R"({"name":"a","script":"x","replicas":2})", "replicas", "only applies to kind service"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"nodes":2})", "nodes", "give replicas instead"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"retries":2})", "retries", "without retries"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"replicas":0})", "replicas", "1..256"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"replicas":5,"maxReplicas":3})", "replicas",
                "from minReplicas to maxReplicas"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"minReplicas":4,"maxReplicas":3})", "minReplicas",
                "at most maxReplicas"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"readinessProbe":{"command":["true"]}})",
                "readinessProbe.command", "not supported yet"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"livenessProbe":{"httpPath":"healthz"}})",
                "livenessProbe.httpPath", "starting with '/'"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"livenessProbe":{"httpPath":"/a b"}})",
                "livenessProbe.httpPath", "no spaces"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"maxReplicas":3,"scaling":{"targetPerReplica":5}})",
                "scaling.metric", "is required"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"maxReplicas":3,"scaling":{"metric":"q-len","targetPerReplica":5}})",
                "scaling.metric", "Prometheus metric name"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"maxReplicas":3,"scaling":{"metric":"q","targetPerReplica":0}})",
                "scaling.targetPerReplica", "above 0"},
        BadCase{R"({"name":"a","script":"x","kind":"service","port":8000,"scaling":{"metric":"q","targetPerReplica":1}})",
                "scaling", "minReplicas below maxReplicas"},
        BadCase{R"({"name":"a","target":"kubernetes","image":"i","command":["x"],"kind":"service","port":8000})", "kind",
                "target slurm only"},
        BadCase{R"([1,2])", "", "JSON object"},
        BadCase{R"({"name":"a","name":"b","script":"x"})", "", "invalid JSON"},
        BadCase{R"({"name":"a","script":"x")", "", "invalid JSON"}));

TEST(WorkloadSpec, AServiceParsesAndRoundTrips) {
  SpecParse p = parse_workload_spec(R"({"name":"web","kind":"service","command":["python3","-m","http.server"],"port":8000,
    "replicas":3,"minReplicas":2,"maxReplicas":5,"gpusPerNode":1,"readinessProbe":{"httpPath":"/ready"},
    "livenessProbe":{"httpPath":"/alive?x=1"},"scaling":{"metric":"queue_length","targetPerReplica":2.5,"cooldownSeconds":30},
    "workspace":"ml","health":"strict"})");
  ASSERT_TRUE(p.spec) << (p.errors.empty() ? "" : p.errors[0].path + ": " + p.errors[0].message);
  const WorkloadSpec& s = *p.spec;
  EXPECT_EQ(s.kind, WorkloadKind::service);
  EXPECT_EQ(s.service.replicas, 3);
  EXPECT_EQ(s.service.min_replicas, 2);
  EXPECT_EQ(s.service.max_replicas, 5);
  EXPECT_EQ(s.service.port, 8000);
  EXPECT_EQ(s.service.readiness->http_path, "/ready");
  EXPECT_EQ(s.service.liveness->http_path, "/alive?x=1");
  EXPECT_EQ(s.service.scaling->metric, "queue_length");
  EXPECT_EQ(s.service.scaling->target_per_replica, 2.5);
  EXPECT_EQ(s.service.scaling->cooldown_seconds, 30);
  SpecParse again = parse_workload_spec(workload_spec_json(s));
  ASSERT_TRUE(again.spec) << again.errors[0].path << ": " << again.errors[0].message;
  EXPECT_EQ(*again.spec, s);
}

TEST(WorkloadSpec, AServiceWithoutReplicasStartsAtItsMinimum) {
  SpecParse p = parse_workload_spec(R"({"name":"web","kind":"service","script":"x","port":8000,"minReplicas":2,"maxReplicas":4})");
  ASSERT_TRUE(p.spec);
  EXPECT_EQ(p.spec->service.replicas, 2);
  EXPECT_EQ(parse_workload_spec(R"({"name":"t","script":"x"})").spec->kind, WorkloadKind::training);
}

TEST(WorkloadSpec, ReportsEveryBadFieldAtOnce) {
  auto errors = errors_of(R"({"name":"a","script":"x","nodes":0,"retries":99,"health":"x"})");
  EXPECT_EQ(errors.size(), 3u);
}

TEST(WorkloadSpec, MalformedJsonIsMarkedSo) {
  EXPECT_TRUE(parse_workload_spec("{").malformed);
  EXPECT_TRUE(parse_workload_spec(std::string(100000, '[')).malformed);  // deep nesting
  EXPECT_FALSE(parse_workload_spec("{}").malformed);
}

}  // namespace
}  // namespace safe::bridge
