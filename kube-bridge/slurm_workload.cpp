#include "kube-bridge/slurm_workload.hpp"

#include <algorithm>
#include <charconv>

#include "common/json_value.hpp"
#include "kube-bridge/shell_quote.hpp"

namespace safe::bridge {

std::vector<std::string> spank_env_for(const SafeOptions& options) {
  std::vector<std::string> out;
  for (const auto& spec : option_specs()) {
    std::string value = options.value_text(spec.id);
    if (!value.empty()) out.push_back(spank_env_name(spec.id) + "=" + value);
  }
  return out;
}

SlurmJobRequest slurm_job_request(const WorkloadSpec& spec, const UserRecord& user, const std::string& work_dir) {
  SlurmJobRequest r;
  r.name = spec.name;
  if (!spec.script.empty()) {
    r.script = spec.script.starts_with("#!") ? spec.script : "#!/bin/bash\n" + spec.script;
  } else {
    // One task per node, as the Kubernetes target runs one pod per node.
    // An elastic workload's tasks follow its node count now (it may run on fewer after a shrink).
    std::string line = spec.options.min_nodes  ? "exec srun --kill-on-bad-exit=1 --ntasks-per-node=1"
                       : spec.nodes > 1        ? "exec srun --kill-on-bad-exit=1"
                                               : "exec";
    for (const auto& arg : spec.command) line += " " + shell_quote(arg);
    r.script = "#!/bin/bash\n" + line + "\n";
  }
  r.uid = user.uid;
  r.gid = user.gid;
  r.work_dir = work_dir;
  r.std_out = work_dir + "/safe-bridge-" + spec.name + "-%j.out";
  r.nodes = spec.nodes;
  r.elastic = spec.options.min_nodes.has_value();
  r.gpus_per_node = spec.gpus_per_node;
  r.cpus_per_task = spec.cpus_per_task;
  r.memory_mb = spec.memory_mb;
  r.time_limit_minutes = spec.time_limit_minutes;
  // What a login shell would give the job, unless the spec says otherwise.
  std::map<std::string, std::string> env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
                                            {"USER", user.name},
                                            {"LOGNAME", user.name},
                                            {"HOME", user.home.empty() ? work_dir : user.home},
                                            {"SHELL", "/bin/bash"},
                                            {"SAFE_WORKLOAD_NAME", spec.name}};
  for (const auto& [k, v] : spec.env) env[k] = v;
  for (const auto& [k, v] : env) r.environment.push_back(k + "=" + v);
  r.spank_env = spank_env_for(spec.options);
  // sbatch also exports its SPANK job environment in the job's own environment, with a
  // SLURM_SPANK_ prefix: that is where spank_safe.so finds the options inside the job.
  for (const auto& entry : r.spank_env) r.environment.push_back("SLURM_SPANK_" + entry);
  r.excluded_nodes = spec.excluded_nodes;
  Json record = json_take(json_object());
  json_t* labels = json_object();
  for (const auto& [k, v] : spec.labels) json_set(labels, k.c_str(), json_str(v));
  json_set(record.get(), "labels", labels);
  r.comment = std::string(kBridgeCommentPrefix) + json_text(record.get());
  return r;
}

SlurmJobRequest replica_job_request(const WorkloadSpec& spec, const UserRecord& user, const std::string& work_dir, int replica,
                                    int port, const std::vector<std::string>& excluded_nodes) {
  WorkloadSpec one = spec;
  one.nodes = 1;
  one.options.retries = 0;  // safed leaves a replica's job alone: the bridge replaces it
  one.env.emplace_back("SAFE_SERVICE_NAME", spec.name);
  one.env.emplace_back("SAFE_SERVICE_PORT", std::to_string(port));
  one.env.emplace_back("SAFE_REPLICA", std::to_string(replica));
  SlurmJobRequest r = slurm_job_request(one, user, work_dir);
  r.name = spec.name + "-" + std::to_string(replica);
  r.std_out = work_dir + "/safe-bridge-" + spec.name + "-r" + std::to_string(replica) + "-%j.out";
  for (const auto& n : excluded_nodes)
    if (std::find(r.excluded_nodes.begin(), r.excluded_nodes.end(), n) == r.excluded_nodes.end()) r.excluded_nodes.push_back(n);
  Json record = json_take(json_object());
  json_t* labels = json_object();
  for (const auto& [k, v] : spec.labels) json_set(labels, k.c_str(), json_str(v));
  json_set(record.get(), "labels", labels);
  json_set(record.get(), "service", json_str(spec.name));
  json_set(record.get(), "replica", json_integer(replica));
  json_set(record.get(), "port", json_integer(port));
  r.comment = std::string(kBridgeCommentPrefix) + json_text(record.get());
  return r;
}

std::string slurm_workload_id(std::uint32_t job_id) { return "slurm-" + std::to_string(job_id); }

std::optional<std::uint32_t> parse_slurm_workload_id(std::string_view id) {
  if (!id.starts_with("slurm-")) return std::nullopt;
  id.remove_prefix(6);
  if (id.empty() || id.size() > 10 || id[0] == '0') return std::nullopt;
  std::uint32_t value = 0;
  auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), value);
  if (ec != std::errc() || end != id.data() + id.size()) return std::nullopt;
  return value;
}

WorkloadPhase workload_phase(const SlurmJob& job) {
  if (job.requeued) return WorkloadPhase::pending;  // the next run waits while the old one winds down
  switch (job.state) {
    case SlurmJobState::pending: return WorkloadPhase::pending;
    case SlurmJobState::running:
    case SlurmJobState::suspended: return WorkloadPhase::running;
    case SlurmJobState::complete: return WorkloadPhase::succeeded;
    case SlurmJobState::cancelled: return WorkloadPhase::stopped;
    default: return WorkloadPhase::failed;
  }
}

std::optional<BridgeRecord> parse_bridge_comment(std::string_view comment) {
  if (!comment.starts_with(kBridgeCommentPrefix)) return std::nullopt;
  comment.remove_prefix(kBridgeCommentPrefix.size());
  BridgeRecord record;
  Json j = json_take(json_loadb(comment.data(), comment.size(), 0, nullptr));
  const char* key;
  json_t* v;
  json_object_foreach(json_object_get(j.get(), "labels"), key, v) {
    if (json_is_string(v)) record.labels[key] = json_string_value(v);
  }
  const json_t* service = json_object_get(j.get(), "service");
  const json_t* replica = json_object_get(j.get(), "replica");
  if (json_is_string(service) && json_is_integer(replica) && json_integer_value(replica) >= 0 &&
      json_integer_value(replica) < 100000) {
    record.service = json_string_value(service);
    record.replica = static_cast<int>(json_integer_value(replica));
    const json_t* port = json_object_get(j.get(), "port");
    if (json_is_integer(port) && json_integer_value(port) > 0 && json_integer_value(port) <= 65535)
      record.port = static_cast<int>(json_integer_value(port));
  }
  return record;
}

std::string expand_output_path(const SlurmJob& job, const std::string& user_name) {
  std::string out;
  const std::string& p = job.std_out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '%' || i + 1 == p.size()) {
      out += p[i];
      continue;
    }
    char c = p[++i];
    if (c == 'j' || c == 'A') out += std::to_string(job.id);
    else if (c == 'u') out += user_name;
    else if (c == 'x') out += job.name;
    else if (c == '%') out += '%';
    else out += std::string("%") + c;
  }
  if (!out.empty() && out[0] != '/') out = job.work_dir + "/" + out;
  return out;
}

}  // namespace safe::bridge
