// SaFE's one configuration file (/etc/safe/safe.yaml), as typed structs. Defaults live here, in
// the member initialisers, and nowhere else; docs/config.md documents each of them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace safe {

// The most automatic requeues a job may have (--safe-retries, max_retries in safe.yaml).
constexpr int kMaxRetries = 50;

enum class HealthLevel { strict, standard, off };
enum class GpuBackendKind { auto_detect, rsmi, nvml, sim };

std::string_view to_string(HealthLevel level);
std::string_view to_string(GpuBackendKind kind);

struct WorkspaceConfig {
  std::string name;
  int gpu_quota = 0;  // 0: no quota (no license is created)
  std::string partition;
  std::string account;
  std::string qos;
  std::vector<std::string> users;   // user names allowed to submit
  std::vector<std::string> groups;  // Unix groups whose members may submit
  int default_retries = 0;
  int max_retries = 3;
  HealthLevel default_health = HealthLevel::standard;
};

struct AdmissionConfig {
  bool require_workspace = false;
  int default_retries = 0;  // for jobs outside any workspace
  int max_retries = kMaxRetries;
  HealthLevel default_health = HealthLevel::standard;
};

struct MountRequirement {
  std::string path;
  int min_free_gib = 1;
  int min_free_inodes_percent = 1;
};

struct HealthThresholds {
  long long ecc_correctable_max = 10000;
  long long ecc_uncorrectable_max = 0;
  int retired_pages_max = 10;
  long long pcie_replay_max = 1000;
  int temperature_max_c = 100;  // used when the device reports no slowdown threshold
  int temperature_margin_c = 5; // fail this many degrees below the device's slowdown threshold
  int stray_gpu_memory_mib = 15;
  int kmsg_window_s = 7200;
  int pcie_bus_error_storm_count = 11000;
  int pcie_bus_error_storm_window_s = 600;
  std::vector<int> xid_critical = {48, 56, 57, 58, 62, 63, 64, 65, 68, 69, 73, 74, 79, 80, 81, 92, 119, 120};
  std::vector<int> xid_warning = {13, 31, 43, 45, 109};
};

struct HealthConfig {
  GpuBackendKind backend = GpuBackendKind::auto_detect;
  std::string sim_dir = "/var/lib/safe/sim";
  std::string state_dir = "/var/lib/safe/health";
  std::string node_name;  // empty: SLURMD_NODENAME, then the host name
  int expected_gpus = 0;  // 0: do not check the count
  int interval_s = 300;
  int jitter_s = 30;
  int check_timeout_s = 10;
  int fail_runs_before_drain = 2;
  int critical_fail_runs_before_drain = 1;
  int pass_runs_before_resume = 3;
  int unknown_runs_before_fail = 3;  // a check "unknown" (timed out) this many runs in a row fails
  int slurm_timeout_s = 5;           // each scontrol call of the node programs
  int gate_timeout_s = 5;            // the prolog/epilog's GPU query
  std::vector<std::string> disabled_checks;  // check names (docs/health.md) not run on this node
  int min_memory_gib = 0;  // 0: do not check
  std::vector<MountRequirement> mounts;
  int ib_min_rate_gbps = 0;  // 0: do not check IB ports
  std::string numa_reference;  // file with the expected GPU -> NUMA map; empty: not checked
  // Each run's Prometheus text goes to safe-healthcheck-NODE.prom here, for node_exporter's
  // textfile collector (Debian's prometheus-node-exporter reads this directory). Written only when
  // the directory exists, so a node without node_exporter needs no setting; "": never written.
  std::string metrics_dir = "/var/lib/prometheus/node-exporter";
  // safed's API as the nodes reach it: each periodic run sends the node's GPU grid there (the web
  // console's cluster page). "": the active safed in etcd (controller.ha), else controller.listen.
  std::string controller_url;
  HealthThresholds thresholds;
};

// Hot spares of one partition (failover.spares): safed keeps `count` healthy idle nodes of it in
// the Slurm reservation safe_spares_PARTITION, out of normal scheduling, and starts a failing-over
// SaFE job on them when the rest of the cluster cannot hold it now (docs/controller.md).
struct SparePoolConfig {
  std::string partition;
  int count = 0;                       // 0 with `nodes`: as many as `nodes` names
  std::string nodes;                   // host list the spares are taken from; "": any node of the partition
  std::vector<std::string> workspaces; // whose jobs may use them; empty: every SaFE job
};

struct FailoverConfig {
  std::vector<int> infra_exit_codes = {75};
  std::vector<std::string> retry_classes = {"node_fault", "infra_transient"};
  int backoff_initial_s = 10;
  int backoff_max_s = 600;
  int rate_limit_per_minute = 20;  // cluster-wide failovers
  int lemon_faults = 3;
  int lemon_window_s = 86400;
  std::vector<SparePoolConfig> spares;
  // An elastic job (--safe-min-nodes) that has not got all its nodes back this long after its
  // fault runs on fewer; grown back to its full size when nodes are free again.
  int shrink_after_s = 300;
};

struct CheckpointConfig {
  std::string signal = "USR1";
  int grace_s = 120;
  std::string complete_marker = "COMPLETE";
};

// safed's own dead-node detection: a TCP connect to the slurmd of each node running a SaFE job.
struct SlurmdProbeConfig {
  int interval_ms = 1000;  // 0 = off (Slurm's SlurmdTimeout alone finds dead nodes)
  int timeout_ms = 1000;   // per probe
  int failures = 3;        // consecutive failed probes before safed sets the node DOWN
  // Refused connections only (the host answers, slurmd is not running: a restart, which waits for
  // the prologs and epilogs in flight, or a crash with the jobs running on): this long first.
  int restart_grace_s = 60;
  int max_in_flight = 256; // probes open at once
};

// Two safed instances, one active, elected in etcd (docs/architecture.md, safed high availability).
struct HaConfig {
  std::vector<std::string> etcd_endpoints;  // http://HOST:2379 of each member; empty: one safed, no election
  std::string prefix = "/safe";             // safed's keys: PREFIX/leader, PREFIX/journal/...
  int lease_ttl_s = 3;                      // how long a silent active instance keeps the role
  int snapshot_every = 1000;                // journal entries between snapshots of the whole store
  bool enabled() const { return !etcd_endpoints.empty(); }
};

struct ControllerConfig {
  std::string state_dir = "/var/lib/safe";
  std::string listen = "127.0.0.1:9810";
  int poll_interval_ms = 1000;
  int keep_history_days = 30;  // finished jobs kept in the state store; 0 = for ever
  SlurmdProbeConfig slurmd_probe;
  HaConfig ha;
};

// Several bridges with a Kubernetes target: the one holding the Lease reconciles, the others
// serve reads (kube-bridge/kube_lease.hpp).
struct LeaderElectionConfig {
  std::string lease;  // a coordination.k8s.io/v1 Lease in the target's namespace; empty: one bridge
  int lease_duration_s = 15;  // a silent leader's Lease is taken over after this
  int renew_deadline_s = 10;  // a leader that cannot renew stops reconciling after this
  int retry_period_s = 2;     // how often the leader renews and the others try
  bool enabled() const { return !lease.empty(); }
};

struct KubernetesConfig {
  std::string kubeconfig;  // empty: in-cluster service account
  std::string namespace_ = "safe";
  std::string gpu_resource = "amd.com/gpu";
  std::string checkpoint_pvc;
  std::string checkpoint_host_path;
  // The image of the init container that makes each workload's directory on the checkpoint
  // volume (as root, with CAP_CHOWN only) and gives it to the workload's user.
  std::string setup_image = "busybox:1.36";
  LeaderElectionConfig leader_election;
};

// Who may use SaFE's APIs (safed's and the REST bridge's): the credentials Slurm itself accepts.
struct AuthConfig {
  std::vector<std::string> admins = {"root"};  // see and change every job and workload
  bool munge = true;
  std::string jwt_key_file;  // Slurm's auth/jwt key; empty: JWTs are not accepted
};

struct KubeBridgeConfig {
  std::string listen = "127.0.0.1:9820";
  std::string tls_cert;
  std::string tls_key;
  int max_body_bytes = 1048576;
  int max_connections = 4096;
  int max_connections_per_client = 64;
  // Where Slurm workloads run: "" = each user's home directory, else a directory (root's, not
  // group- or world-writable) holding one directory per user.
  std::string slurm_work_dir;
  std::string controller_url;           // safed's API for workload history; "" = none
  // Services' records and endpoints files (kube-bridge/service_controller.hpp); "" = no services.
  std::string state_dir = "/var/lib/safe-kube-bridge";
  KubernetesConfig kubernetes;
};

struct SafeConfig {
  std::vector<WorkspaceConfig> workspaces;
  AdmissionConfig admission;
  HealthConfig health;
  FailoverConfig failover;
  CheckpointConfig checkpoint;
  ControllerConfig controller;
  KubeBridgeConfig kube_bridge;
  AuthConfig auth;

  const WorkspaceConfig* find_workspace(std::string_view name) const;
};

struct ConfigError {
  std::string file;
  int line = 0;  // 0: the problem is with the file as a whole
  int column = 0;
  std::string message;
  std::string to_string() const;  // "FILE:LINE:COL: message"
};

struct ConfigResult {
  std::optional<SafeConfig> config;  // set only when errors is empty
  std::vector<ConfigError> errors;
  std::string text;  // the bytes parsed: safed reports their digest (safectl doctor compares hosts')
  bool ok() const { return errors.empty(); }
};

// Parses and validates; `file` names the source in error messages.
ConfigResult parse_config(std::string_view text, const std::string& file);
ConfigResult load_config_file(const std::string& path);

// $SAFE_CONFIG when set and non-empty, else the installed default (/etc/safe/safe.yaml).
std::string config_path_from_env();

// Every key path the schema knows (e.g. "health.thresholds.pcie_replay_max",
// "workspaces[].gpu_quota"), for documentation checks.
std::vector<std::string> config_key_paths();

}  // namespace safe
