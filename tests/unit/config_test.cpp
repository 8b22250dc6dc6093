// Table-driven tests of safe.yaml parsing: valid files, and each class of error with its position.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "common/config.hpp"
#include "common/yaml_document.hpp"
#include "tests/unit/source_path.hpp"

namespace safe {
namespace {

struct ErrorCase {
  const char* name;
  const char* yaml;
  int line;
  int column;
  const char* message_part;
};

class ConfigErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(ConfigErrorTest, ReportsFileLineColumnAndMessage) {
  const ErrorCase& c = GetParam();
  ConfigResult r = parse_config(c.yaml, "t.yaml");
  ASSERT_FALSE(r.ok()) << c.name << ": expected an error";
  EXPECT_FALSE(r.config.has_value());
  const ConfigError& e = r.errors.front();
  EXPECT_EQ(e.line, c.line) << e.to_string();
  EXPECT_EQ(e.column, c.column) << e.to_string();
  EXPECT_NE(e.message.find(c.message_part), std::string::npos) << e.to_string();
  std::string expected_prefix = "t.yaml:" + std::to_string(c.line) + ":" + std::to_string(c.column) + ": ";
  EXPECT_EQ(e.to_string().rfind(expected_prefix, 0), 0u) << e.to_string();
}

const ErrorCase kErrorCases[] = {
    {"yaml_syntax", "health:\n  backend: [sim\n", 3, 1, "YAML syntax error"},
    {"bad_indentation", "health:\n  backend: sim\n interval_s: 5\n", 3, 2, "YAML syntax error"},
    {"top_level_not_mapping", "- a\n- b\n", 1, 1, "top level must be a mapping"},
    {"unknown_section", "helth:\n  backend: sim\n", 1, 1, "unknown key 'helth' (did you mean 'health'?)"},
    {"unknown_key_suggests", "health:\n  intervl_s: 30\n", 2, 3, "did you mean 'interval_s'"},
    {"moved_key_says_where", "kube_bridge:\n  admins: [root]\n", 2, 11,
     "kube_bridge.admins has moved to auth.admins; move the setting there"},
    {"work_dir_must_be_absolute", "kube_bridge:\n  slurm_work_dir: work\n", 2, 19, "slurm_work_dir"},
    {"spares_need_a_partition", "failover:\n  spares:\n    - count: 1\n", 3, 7, "spares[0].partition: is required"},
    {"spares_need_a_size", "failover:\n  spares:\n    - partition: gpu\n", 3, 7,
     "set count, nodes, or both"},
    {"spares_count_over_nodes", "failover:\n  spares:\n    - partition: gpu\n      count: 3\n      nodes: n[1-2]\n",
     4, 14, "count: 3 exceeds the 2 nodes named in nodes"},
    {"spares_bad_host_list", "failover:\n  spares:\n    - partition: gpu\n      count: 1\n      nodes: \"n1 n2\"\n", 5, 14,
     "expects a Slurm host list"},
    {"spares_one_pool_per_partition",
     "failover:\n  spares:\n    - partition: gpu\n      count: 1\n    - partition: gpu\n      count: 2\n", 3, 5,
     "spares[1].partition: gpu has a pool already (spares[0]); one pool per partition"},
    {"unknown_key_lists_allowed", "checkpoint:\n  zzzzzzzzzz: 1\n", 2, 3, "allowed: complete_marker, grace_s, signal"},
    {"duplicate_key", "health:\n  interval_s: 30\n  interval_s: 40\n", 3, 3, "duplicate key 'interval_s'"},
    {"int_wrong_type", "health:\n  interval_s: soon\n", 2, 15, "health.interval_s: expects an integer 5..86400, got 'soon'"},
    {"int_quoted_is_string", "health:\n  interval_s: \"30\"\n", 2, 15, "expects an integer"},
    {"int_out_of_range_low", "health:\n  interval_s: 1\n", 2, 15, "expects an integer 5..86400, got '1'"},
    {"int_out_of_range_high", "controller:\n  poll_interval_ms: 600000\n", 2, 21, "100..60000"},
    {"int_float", "checkpoint:\n  grace_s: 1.5\n", 2, 12, "expects an integer"},
    {"int_empty", "checkpoint:\n  grace_s:\n", 2, 11, "got an empty value"},
    {"bool_wrong", "admission:\n  require_workspace: maybe\n", 2, 22, "expects true or false, got 'maybe'"},
    {"enum_wrong", "health:\n  backend: cuda\n", 2, 12, "expects one of auto, rsmi, nvml, sim, got 'cuda'"},
    {"section_not_mapping", "health: 5\n", 1, 9, "health: expects a mapping of keys"},
    {"list_expected", "failover:\n  infra_exit_codes: 75\n", 2, 21, "expects a list of integers"},
    {"list_item_range", "failover:\n  infra_exit_codes: [75, 300]\n", 2, 26, "infra_exit_codes[1]: expects an integer 1..255"},
    {"ha_endpoint_not_a_url", "controller:\n  ha:\n    etcd_endpoints: [10.0.0.1:2379]\n", 3, 22,
     "expects http://HOST:PORT of an etcd member"},
    {"ha_ttl_below_etcds_least", "controller:\n  ha:\n    lease_ttl_s: 1\n", 3, 18, "2..60"},
    {"ha_snapshot_every_entry", "controller:\n  ha:\n    snapshot_every: 1\n", 3, 21, "2..1000000"},
    {"lease_renew_not_below_duration",
     "kube_bridge:\n  kubernetes:\n    leader_election:\n      lease: b\n      lease_duration_s: 10\n      renew_deadline_s: 10\n",
     6, 25, "renew_deadline_s: 10 s: keep it below lease_duration_s (10 s)"},
    {"lease_name_not_an_object_name", "kube_bridge:\n  kubernetes:\n    leader_election:\n      lease: My_Lease\n", 4, 14,
     "expects a Kubernetes object name"},
    {"string_list_item_bad", "failover:\n  retry_classes: [node_fault, oops]\n", 2, 31, "retry_classes[1]: expects a failure class"},
    {"workspaces_not_list", "workspaces:\n  name: ml\n", 2, 3, "workspaces: expects a list"},
    {"workspace_item_not_mapping", "workspaces:\n  - ml\n", 2, 5, "workspaces[0]: expects a mapping"},
    {"workspace_name_required", "workspaces:\n  - gpu_quota: 8\n", 2, 5, "workspaces[0].name: is required"},
    {"workspace_name_chars", "workspaces:\n  - name: \"my ws\"\n", 2, 11, "expects a workspace name"},
    {"workspace_duplicate", "workspaces:\n  - name: ml\n  - name: cv\n  - name: ml\n", 4, 11,
     "duplicate workspace name 'ml' (first defined on line 2)"},
    {"workspace_unknown_key", "workspaces:\n  - name: ml\n    quota: 8\n", 3, 5, "unknown key 'quota' in workspaces[0]"},
    {"workspace_negative_quota", "workspaces:\n  - name: ml\n    gpu_quota: -8\n", 3, 16, "gpu_quota: expects an integer 0.."},
    {"workspace_retries_order", "workspaces:\n  - name: ml\n    default_retries: 4\n    max_retries: 2\n", 3, 22,
     "default_retries: 4 exceeds max_retries 2"},
    {"workspace_user_bad", "workspaces:\n  - name: ml\n    users: [\"bad user\"]\n", 3, 13, "users[0]: expects a user or group name"},
    {"relative_path", "health:\n  state_dir: var/lib/safe\n", 2, 14, "expects an absolute path"},
    {"dotdot_path", "controller:\n  state_dir: /var/../etc\n", 2, 14, "must not contain '..'"},
    {"listen_bad_port", "controller:\n  listen: 127.0.0.1:99999\n", 2, 11, "expects HOST:PORT"},
    {"listen_no_port", "kube_bridge:\n  listen: localhost\n", 2, 11, "expects HOST:PORT"},
    {"signal_uncatchable", "checkpoint:\n  signal: KILL\n", 2, 11, "expects a signal a job can catch"},
    {"tls_half", "kube_bridge:\n  tls_cert: /etc/safe/cert.pem\n", 2, 13, "set both to enable TLS"},
    {"backoff_order", "failover:\n  backoff_initial_s: 900\n  backoff_max_s: 60\n", 2, 22, "exceeds backoff_max_s 60"},
    {"nested_unknown", "kube_bridge:\n  kubernetes:\n    namespce: x\n", 3, 5, "did you mean 'namespace'"},
    {"k8s_namespace_bad", "kube_bridge:\n  kubernetes:\n    namespace: Bad_NS\n", 3, 16, "RFC 1123"},
    {"threshold_type", "health:\n  thresholds:\n    pcie_replay_max: [1]\n", 3, 22, "expects an integer"},
    {"health_timeouts_past_slurm_limit", "health:\n  check_timeout_s: 50\n  slurm_timeout_s: 10\n", 2, 20,
     "check_timeout_s + slurm_timeout_s = 60 s: keep it at most 55"},
    {"second_document", "health:\n  backend: sim\n---\nhealth: {}\n", 3, 1, "only one YAML document"},
    {"tab_indentation", "health:\n\tbackend: sim\n", 2, 1, "YAML syntax error"},
};

INSTANTIATE_TEST_SUITE_P(Errors, ConfigErrorTest, ::testing::ValuesIn(kErrorCases),
                         [](const auto& info) { return std::string(info.param.name); });

struct ValidCase {
  const char* name;
  const char* yaml;
  void (*check)(const SafeConfig&);
};

class ConfigValidTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ConfigValidTest, Parses) {
  const ValidCase& c = GetParam();
  ConfigResult r = parse_config(c.yaml, "t.yaml");
  ASSERT_TRUE(r.ok()) << r.errors.front().to_string();
  ASSERT_TRUE(r.config.has_value());
  c.check(*r.config);
}

const ValidCase kValidCases[] = {
    {"empty_file_all_defaults", "",
     [](const SafeConfig& c) {
       EXPECT_TRUE(c.workspaces.empty());
       EXPECT_EQ(c.health.backend, GpuBackendKind::auto_detect);
       EXPECT_EQ(c.health.interval_s, 300);
       EXPECT_EQ(c.checkpoint.signal, "USR1");
       EXPECT_EQ(c.checkpoint.grace_s, 120);
       EXPECT_EQ(c.controller.listen, "127.0.0.1:9810");
       EXPECT_EQ(c.failover.infra_exit_codes, std::vector<int>{75});
       EXPECT_EQ(c.health.thresholds.ecc_correctable_max, 10000);
     }},
    {"controller_ha", "controller:\n  ha:\n    etcd_endpoints: [http://10.0.0.1:2379, \"http://[::1]:2379\"]\n"
     "    prefix: /safe/c1\n    lease_ttl_s: 5\n    snapshot_every: 50\n",
     [](const SafeConfig& c) {
       EXPECT_TRUE(c.controller.ha.enabled());
       EXPECT_EQ(2u, c.controller.ha.etcd_endpoints.size());
       EXPECT_EQ("/safe/c1", c.controller.ha.prefix);
       EXPECT_EQ(5, c.controller.ha.lease_ttl_s);
       EXPECT_EQ(50, c.controller.ha.snapshot_every);
     }},
    {"kube_leader_election", "kube_bridge:\n  kubernetes:\n    leader_election:\n      lease: safe-kube-bridge\n"
     "      lease_duration_s: 4\n      renew_deadline_s: 3\n      retry_period_s: 1\n",
     [](const SafeConfig& c) {
       const LeaderElectionConfig& l = c.kube_bridge.kubernetes.leader_election;
       EXPECT_TRUE(l.enabled());
       EXPECT_EQ("safe-kube-bridge", l.lease);
       EXPECT_EQ(4, l.lease_duration_s);
       EXPECT_EQ(3, l.renew_deadline_s);
       EXPECT_EQ(1, l.retry_period_s);
     }},
    {"comments_only", "# nothing here\n\n",
     [](const SafeConfig& c) { EXPECT_EQ(c.admission.max_retries, 50); }},
    {"empty_sections_keep_defaults", "health:\ncontroller: {}\n",
     [](const SafeConfig& c) {
       EXPECT_EQ(c.health.pass_runs_before_resume, 3);
       EXPECT_EQ(c.controller.poll_interval_ms, 1000);
     }},
    {"workspace_full",
     "workspaces:\n  - name: ml\n    gpu_quota: 64\n    partition: gpu\n    account: mlacct\n    qos: high\n"
     "    users: [alice, bob]\n    groups: [ml-team]\n    default_retries: 2\n    max_retries: 4\n"
     "    default_health: strict\n",
     [](const SafeConfig& c) {
       ASSERT_EQ(c.workspaces.size(), 1u);
       const WorkspaceConfig& w = c.workspaces[0];
       EXPECT_EQ(w.name, "ml");
       EXPECT_EQ(w.gpu_quota, 64);
       EXPECT_EQ(w.partition, "gpu");
       EXPECT_EQ(w.account, "mlacct");
       EXPECT_EQ(w.qos, "high");
       EXPECT_EQ(w.users, (std::vector<std::string>{"alice", "bob"}));
       EXPECT_EQ(w.groups, std::vector<std::string>{"ml-team"});
       EXPECT_EQ(w.default_retries, 2);
       EXPECT_EQ(w.max_retries, 4);
       EXPECT_EQ(w.default_health, HealthLevel::strict);
       EXPECT_EQ(c.find_workspace("ml"), &c.workspaces[0]);
       EXPECT_EQ(c.find_workspace("cv"), nullptr);
     }},
    {"workspace_defaults", "workspaces:\n  - name: cv\n",
     [](const SafeConfig& c) {
       ASSERT_EQ(c.workspaces.size(), 1u);
       EXPECT_EQ(c.workspaces[0].gpu_quota, 0);
       EXPECT_EQ(c.workspaces[0].max_retries, 3);
       EXPECT_EQ(c.workspaces[0].default_health, HealthLevel::standard);
     }},
    {"block_lists_and_flow_maps",
     "failover:\n  infra_exit_codes:\n    - 75\n    - 143\n  retry_classes: [node_fault]\n"
     "health: {backend: sim, interval_s: 5}\n",
     [](const SafeConfig& c) {
       EXPECT_EQ(c.failover.infra_exit_codes, (std::vector<int>{75, 143}));
       EXPECT_EQ(c.failover.retry_classes, std::vector<std::string>{"node_fault"});
       EXPECT_EQ(c.health.backend, GpuBackendKind::sim);
       EXPECT_EQ(c.health.interval_s, 5);
     }},
    {"empty_lists", "failover:\n  infra_exit_codes: []\nauth:\n  admins: []\n",
     [](const SafeConfig& c) {
       EXPECT_TRUE(c.failover.infra_exit_codes.empty());
       EXPECT_TRUE(c.auth.admins.empty());
     }},
    {"signal_forms", "checkpoint:\n  signal: SIGUSR2\n",
     [](const SafeConfig& c) { EXPECT_EQ(c.checkpoint.signal, "SIGUSR2"); }},
    {"mounts_and_thresholds",
     "health:\n  mounts:\n    - path: /scratch\n      min_free_gib: 10\n  thresholds:\n    xid_critical: [79]\n"
     "    ecc_correctable_max: 50000000\n",
     [](const SafeConfig& c) {
       ASSERT_EQ(c.health.mounts.size(), 1u);
       EXPECT_EQ(c.health.mounts[0].path, "/scratch");
       EXPECT_EQ(c.health.mounts[0].min_free_gib, 10);
       EXPECT_EQ(c.health.mounts[0].min_free_inodes_percent, 1);
       EXPECT_EQ(c.health.thresholds.xid_critical, std::vector<int>{79});
       EXPECT_EQ(c.health.thresholds.ecc_correctable_max, 50000000);
       EXPECT_EQ(c.health.thresholds.retired_pages_max, 10);
     }},
    {"ipv6_listen_and_tls", "kube_bridge:\n  listen: \"[::1]:9443\"\n  tls_cert: /c.pem\n  tls_key: /k.pem\n",
     [](const SafeConfig& c) {
       EXPECT_EQ(c.kube_bridge.listen, "[::1]:9443");
       EXPECT_EQ(c.kube_bridge.tls_key, "/k.pem");
     }},
    {"kubernetes_section",
     "kube_bridge:\n  kubernetes:\n    namespace: train\n    gpu_resource: nvidia.com/gpu\n    checkpoint_pvc: ckpt\n",
     [](const SafeConfig& c) {
       EXPECT_EQ(c.kube_bridge.kubernetes.namespace_, "train");
       EXPECT_EQ(c.kube_bridge.kubernetes.gpu_resource, "nvidia.com/gpu");
       EXPECT_EQ(c.kube_bridge.kubernetes.checkpoint_pvc, "ckpt");
     }},
    {"anchors_and_aliases", "workspaces:\n  - &base {name: a, max_retries: 7}\n  - name: b\n    max_retries: 7\n",
     [](const SafeConfig& c) {
       ASSERT_EQ(c.workspaces.size(), 2u);
       EXPECT_EQ(c.workspaces[0].max_retries, 7);
     }},
};

INSTANTIATE_TEST_SUITE_P(Valid, ConfigValidTest, ::testing::ValuesIn(kValidCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ConfigErrors, AllErrorsAreReportedNotJustTheFirst) {
  ConfigResult r = parse_config("health:\n  interval_s: x\n  backend: y\nfoo: 1\n", "t.yaml");
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[1].line, 3);
  EXPECT_EQ(r.errors[2].line, 4);
}

TEST(ConfigErrors, MissingFileSaysWhy) {
  ConfigResult r = load_config_file("/nonexistent/safe.yaml");
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(), "/nonexistent/safe.yaml: cannot read: No such file or directory");
}

// A FIFO (no writer: an open or read of it would block) or a device named as the config is an
// error at once, not a hung reader.
TEST(ConfigErrors, AFifoOrDeviceIsRefusedWithoutBlocking) {
  char dir[] = "/tmp/safe-config-fifo.XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string fifo = std::string(dir) + "/safe.yaml";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ConfigResult r = load_config_file(fifo);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].to_string(), fifo + ": cannot read: not a regular file");
  unlink(fifo.c_str());
  rmdir(dir);
  ConfigResult zero = load_config_file("/dev/zero");
  ASSERT_EQ(zero.errors.size(), 1u);
  EXPECT_EQ(zero.errors[0].message, "cannot read: not a regular file");
}

TEST(ConfigErrors, DeepNestingIsRejectedNotCrashed) {
  std::string deep(200, '[');
  deep += std::string(200, ']');
  ConfigResult r = parse_config("health: " + deep + "\n", "t.yaml");
  ASSERT_FALSE(r.ok());
  std::string all;
  for (const auto& e : r.errors) all += e.to_string() + "\n";
  EXPECT_NE(all.find("t.yaml:1:73: nesting deeper than 64 levels"), std::string::npos) << all;
}

TEST(ConfigEnv, SafeConfigVariableWins) {
  setenv("SAFE_CONFIG", "/tmp/x.yaml", 1);
  EXPECT_EQ(config_path_from_env(), "/tmp/x.yaml");
  setenv("SAFE_CONFIG", "", 1);
  EXPECT_EQ(config_path_from_env(), SAFE_DEFAULT_CONFIG_PATH);
  unsetenv("SAFE_CONFIG");
  EXPECT_EQ(config_path_from_env(), SAFE_DEFAULT_CONFIG_PATH);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The shipped example must pass, and it and the reference must name every key the schema has.
TEST(ConfigDocs, ExampleIsValidAndComplete) {
  ConfigResult r = load_config_file(safe::test::source_path("etc/safe.yaml"));
  ASSERT_TRUE(r.ok()) << r.errors.front().to_string();
  std::string example = read_file(safe::test::source_path("etc/safe.yaml"));
  std::string reference = read_file(safe::test::source_path("docs/config.md"));
  ASSERT_FALSE(reference.empty());
  // Every key path the example file holds ("workspaces[].name"), to be matched whole: a leaf
  // name found anywhere in the file would hide a key missing from its own section.
  yaml::ParseResult doc = yaml::parse(example);
  ASSERT_TRUE(doc.root.has_value());
  std::set<std::string> in_example;
  std::function<void(const yaml::Node&, const std::string&)> walk = [&](const yaml::Node& n, const std::string& path) {
    if (!path.empty()) in_example.insert(path);
    if (n.kind == yaml::Node::Kind::mapping)
      for (const auto& e : n.entries) walk(e.value, path.empty() ? e.key.value : path + "." + e.key.value);
    if (n.kind == yaml::Node::Kind::sequence)
      for (const auto& item : n.items) walk(item, path + "[]");
  };
  walk(*doc.root, "");
  std::vector<std::string> keys = config_key_paths();
  EXPECT_GT(keys.size(), 60u);
  for (const auto& path : keys) {
    EXPECT_TRUE(in_example.count(path)) << "etc/safe.yaml lacks " << path;
    EXPECT_NE(reference.find("`" + path + "`"), std::string::npos) << "docs/config.md lacks `" << path << "`";
  }
}

TEST(ConfigDocs, TestClusterConfigIsValid) {
  ConfigResult r = load_config_file(safe::test::source_path("tests/cluster/safe.yaml"));
  ASSERT_TRUE(r.ok()) << r.errors.front().to_string();
}

}  // namespace
}  // namespace safe
