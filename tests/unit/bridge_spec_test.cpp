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
        BadCase{R"([1,2])", "", "JSON object"},
        BadCase{R"({"name":"a","name":"b","script":"x"})", "", "invalid JSON"},
        BadCase{R"({"name":"a","script":"x")", "", "invalid JSON"}));

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
