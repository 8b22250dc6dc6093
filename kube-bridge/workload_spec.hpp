// The workload spec the REST API takes (POST /api/v1/workloads), parsed and validated into a
// plain struct. The SaFE options (workspace, retries, checkpoint, health, hangTimeout) go through
// common/safe_options' validators, so a bad value reads exactly as it does for sbatch --safe-*.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/safe_options.hpp"

namespace safe::bridge {

enum class TargetKind { slurm, kubernetes };
std::string_view to_string(TargetKind target);

// training: a batch job that runs to its end (with retries); service: replicas that run until
// stopped, each restarted wherever it fails (service_controller.hpp).
enum class WorkloadKind { training, service };
std::string_view to_string(WorkloadKind kind);

// A probe of a replica: an HTTP GET of `http_path` on the replica's port (2xx or 3xx: passes).
struct ProbeSpec {
  std::string http_path;
  bool operator==(const ProbeSpec&) const = default;
};

// Replicas wanted = ceil(sum over ready replicas of `metric` / target_per_replica), within
// [min_replicas, max_replicas]; up at once, down only after cooldown_seconds of lower demand.
struct ScalingRule {
  std::string metric;  // a Prometheus metric name the replicas serve at /metrics on their port
  double target_per_replica = 1;
  int cooldown_seconds = 60;
  bool operator==(const ScalingRule&) const = default;
};

struct ServiceSpec {
  int replicas = 1;
  int min_replicas = 1;
  int max_replicas = 1;
  int port = 0;  // each replica's, in SAFE_SERVICE_PORT (one per replica where nodes share a host)
  std::optional<ProbeSpec> readiness;
  std::optional<ProbeSpec> liveness;
  std::optional<ScalingRule> scaling;
  bool operator==(const ServiceSpec&) const = default;
};

struct WorkloadSpec {
  std::string name;
  TargetKind target = TargetKind::slurm;
  WorkloadKind kind = WorkloadKind::training;
  ServiceSpec service;  // kind service only
  std::string image;                 // Kubernetes: required; Slurm: ignored
  std::vector<std::string> command;  // argv; exactly one of command and script
  std::string script;                // a shell script (#! line optional)
  int nodes = 1;
  int gpus_per_node = 0;
  int cpus_per_task = 1;
  long long memory_mb = 0;  // per node; 0: the partition's default
  int time_limit_minutes = 0;  // 0: the partition's default
  std::optional<int> checkpoint_grace_seconds;  // folded into options.ckpt_signal (SIG@SECS)
  SafeOptions options;  // workspace, retries, ckpt_dir, ckpt_signal, health, hang_timeout
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> excluded_nodes;
  std::map<std::string, std::string> labels;
  bool operator==(const WorkloadSpec&) const = default;
};

struct FieldError {
  std::string path;     // "checkpoint.dir", "env.FOO", "command[1]", "" for the body itself
  std::string message;  // what is wrong and what is expected
  bool operator==(const FieldError&) const = default;
};

struct SpecParse {
  std::optional<WorkloadSpec> spec;  // set only when errors is empty
  bool malformed = false;            // not JSON at all (400), as opposed to invalid fields (422)
  std::vector<FieldError> errors;
};

SpecParse parse_workload_spec(std::string_view body);

// The spec as the API takes it: parse_workload_spec(workload_spec_json(s)) gives `s` back.
std::string workload_spec_json(const WorkloadSpec& spec);

// Limits of the spec, documented in docs/rest-api.md and the OpenAPI file.
constexpr int kMaxNodes = 1024;
constexpr int kMaxGpusPerNode = 64;
constexpr int kMaxCpusPerTask = 1024;
constexpr int kMaxTimeLimitMinutes = 365 * 24 * 60;
constexpr std::size_t kMaxScriptBytes = 256 * 1024;
constexpr std::size_t kMaxEnvEntries = 256;
constexpr std::size_t kMaxLabels = 64;
constexpr std::size_t kMaxListItems = 1024;
constexpr int kMaxReplicas = 256;
constexpr int kMinServicePort = 1024;  // users' processes cannot listen below it
constexpr int kMaxCooldownSeconds = 24 * 3600;
constexpr int kMinServiceTimeLimitMinutes = 10;

}  // namespace safe::bridge
