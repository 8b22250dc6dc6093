#include "kube-bridge/workload_spec.hpp"

#include <algorithm>
#include <cctype>
#include <regex>

#include "common/signal_name.hpp"
#include "common/json_value.hpp"

namespace safe::bridge {
namespace {

constexpr const char* kFields[] = {"name",    "workspace",  "target",  "image",         "command",
                                   "script",  "nodes",      "gpusPerNode", "cpusPerTask", "memory",
                                   "timeLimit", "retries",  "checkpoint", "health",     "hangTimeout",
                                   "minNodes", "nodeMultiple", "env",    "excludedNodes", "labels",
                                   "kind",    "replicas",   "minReplicas", "maxReplicas", "port",
                                   "readinessProbe", "livenessProbe", "scaling"};
constexpr const char* kServiceOnlyFields[] = {"replicas", "minReplicas", "maxReplicas", "port",
                                              "readinessProbe", "livenessProbe", "scaling"};
// What a service has no use for: it restarts without a retry budget and runs until stopped.
constexpr const char* kTrainingOnlyFields[] = {"retries", "checkpoint", "hangTimeout", "minNodes", "nodeMultiple", "nodes"};
constexpr const char* kCheckpointFields[] = {"dir", "signal", "graceSeconds"};

bool matches(std::string_view s, const char* pattern) {
  static thread_local std::map<const char*, std::regex> cache;
  auto it = cache.find(pattern);
  if (it == cache.end()) it = cache.emplace(pattern, std::regex(pattern, std::regex::extended)).first;
  return std::regex_match(s.begin(), s.end(), it->second);
}

bool has_control_chars(std::string_view s, bool allow_newlines) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && !(allow_newlines && (c == '\n' || c == '\t' || c == '\r'))) || u == 0x7f) return true;
  }
  return false;
}

class SpecReader {
 public:
  explicit SpecReader(SpecParse& out) : out_(out) {}

  void error(std::string path, std::string message) { out_.errors.push_back({std::move(path), std::move(message)}); }

  std::optional<std::string> string(const json_t* v, const std::string& path, std::size_t max_len = 4096) {
    if (!json_is_string(v)) return error(path, "expects a string"), std::nullopt;
    std::string s(json_string_value(v), json_string_length(v));
    if (s.size() > max_len) return error(path, "expects at most " + std::to_string(max_len) + " characters"), std::nullopt;
    if (s.find('\0') != std::string::npos) return error(path, "must not contain NUL characters"), std::nullopt;
    return s;
  }

  std::optional<long long> integer(const json_t* v, const std::string& path, long long lo, long long hi) {
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
      return error(path, "expects an integer " + std::to_string(lo) + ".." + std::to_string(hi)), std::nullopt;
    return json_integer_value(v);
  }

  // A --safe-* option given as JSON: its text goes through the CLI's parser and messages.
  void option(SafeOptions& options, SafeOption id, const json_t* v, const std::string& path, bool numeric) {
    std::string text;
    if (numeric) {
      if (!json_is_integer(v)) return error(path, "expects an integer");
      text = std::to_string(json_integer_value(v));
    } else {
      auto s = string(v, path, 1100);
      if (!s) return;
      text = *s;
    }
    if (Status parsed = parse_option(options, id, text); !parsed) error(path, parsed.error());
  }

 private:
  SpecParse& out_;
};

// "16G", "512M", "1T", "1024" (MiB), as sbatch --mem reads them.
std::optional<long long> memory_mb(std::string_view text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  long long unit = 1;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(text.back())));
  if (!std::isdigit(static_cast<unsigned char>(last))) {
    if (last == 'K') unit = -1024;
    else if (last == 'M') unit = 1;
    else if (last == 'G') unit = 1024;
    else if (last == 'T') unit = 1024 * 1024;
    else return std::nullopt;
    text.remove_suffix(1);
  }
  if (text.empty()) return std::nullopt;
  long long n = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (unit < 0) return (n + 1023) / 1024;
  return n * unit;
}

std::optional<ProbeSpec> read_probe(SpecReader& r, const json_t* v, const std::string& path) {
  if (!json_is_object(v)) return r.error(path, "expects an object {httpPath}"), std::nullopt;
  const char* key;
  json_t* f;
  json_object_foreach(const_cast<json_t*>(v), key, f) {
    std::string k(key);
    if (k == "command")
      r.error(path + ".command", "command probes are not supported yet; give httpPath (an HTTP GET on the replica's port)");
    else if (k != "httpPath")
      r.error(path + "." + k.substr(0, 80), "unknown field; expected httpPath");
  }
  const json_t* p = json_object_get(v, "httpPath");
  if (!p) {
    if (!json_object_get(v, "command")) r.error(path + ".httpPath", "is required");
    return std::nullopt;
  }
  auto s = r.string(p, path + ".httpPath", 1024);
  if (!s) return std::nullopt;
  if (!matches(*s, "/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*"))
    return r.error(path + ".httpPath", "expects a URL path such as /healthz (starting with '/', no spaces)"), std::nullopt;
  return ProbeSpec{*s};
}

void read_service_fields(SpecReader& r, const json_t* root, WorkloadSpec& spec) {
  ServiceSpec& svc = spec.service;
  if (spec.kind != WorkloadKind::service) {
    for (const char* f : kServiceOnlyFields)
      if (json_object_get(root, f)) r.error(f, "only applies to kind service");
    return;
  }
  for (const char* f : kTrainingOnlyFields)
    if (json_object_get(root, f))
      r.error(f, std::string_view(f) == "nodes" ? "a service's replica runs on one node; give replicas instead"
                                                : "only applies to kind training: a service restarts its replicas "
                                                  "until stopped, without retries or checkpoints");
  if (spec.target == TargetKind::kubernetes)
    r.error("kind", "services run on target slurm only for now; use target slurm");
  if (const json_t* p = json_object_get(root, "port")) {
    if (auto v = r.integer(p, "port", kMinServicePort, 65535)) svc.port = static_cast<int>(*v);
  } else {
    r.error("port", "is required for kind service: the port each replica listens on (SAFE_SERVICE_PORT)");
  }
  bool has_replicas = json_object_get(root, "replicas") != nullptr;
  if (const json_t* v = json_object_get(root, "replicas"))
    if (auto n = r.integer(v, "replicas", 1, kMaxReplicas)) svc.replicas = static_cast<int>(*n);
  // Unset bounds follow replicas (and each other): {"replicas": 5, "maxReplicas": 3} is about
  // replicas, not about the minimum.
  const json_t* min_given = json_object_get(root, "minReplicas");
  const json_t* max_given = json_object_get(root, "maxReplicas");
  svc.min_replicas = svc.max_replicas = svc.replicas;
  if (min_given)
    if (auto n = r.integer(min_given, "minReplicas", 1, kMaxReplicas)) svc.min_replicas = static_cast<int>(*n);
  if (max_given)
    if (auto n = r.integer(max_given, "maxReplicas", 1, kMaxReplicas)) svc.max_replicas = static_cast<int>(*n);
  if (!max_given) svc.max_replicas = std::max(svc.max_replicas, svc.min_replicas);
  if (!min_given) svc.min_replicas = std::min(svc.min_replicas, svc.max_replicas);
  if (!has_replicas) svc.replicas = svc.min_replicas;
  if (const json_t* t = json_object_get(root, "timeLimit"); json_is_integer(t) && json_integer_value(t) < kMinServiceTimeLimitMinutes)
    r.error("timeLimit", "a service's replicas run until stopped: give at least " + std::to_string(kMinServiceTimeLimitMinutes) +
                             " minutes (each job is replaced 2 minutes before its limit), or leave it out");
  if (svc.port && svc.port + 2 * svc.max_replicas - 1 > 65535)
    r.error("port", "leaves no room for the replicas' ports: each job of the service listens on a port of its own, from port "
                    "up to port + 2 x maxReplicas - 1; give a port of at most " + std::to_string(65536 - 2 * svc.max_replicas));
  if (svc.min_replicas > svc.max_replicas) r.error("minReplicas", "expects at most maxReplicas");
  else if (svc.replicas < svc.min_replicas || svc.replicas > svc.max_replicas)
    r.error("replicas", "expects a count from minReplicas to maxReplicas");
  if (const json_t* p = json_object_get(root, "readinessProbe")) svc.readiness = read_probe(r, p, "readinessProbe");
  if (const json_t* p = json_object_get(root, "livenessProbe")) svc.liveness = read_probe(r, p, "livenessProbe");
  if (const json_t* s = json_object_get(root, "scaling")) {
    if (!json_is_object(s)) return r.error("scaling", "expects an object {metric, targetPerReplica, cooldownSeconds}");
    const char* key;
    json_t* f;
    json_object_foreach(const_cast<json_t*>(s), key, f) {
      std::string k(key);
      if (k != "metric" && k != "targetPerReplica" && k != "cooldownSeconds")
        r.error("scaling." + k.substr(0, 80), "unknown field; expected metric, targetPerReplica or cooldownSeconds");
    }
    ScalingRule rule;
    const json_t* m = json_object_get(s, "metric");
    if (!m) r.error("scaling.metric", "is required: a metric the replicas serve at /metrics, such as queue_length");
    else if (auto name = r.string(m, "scaling.metric", 200)) {
      if (!matches(*name, "[a-zA-Z_:][a-zA-Z0-9_:]*")) r.error("scaling.metric", "expects a Prometheus metric name");
      else rule.metric = *name;
    }
    const json_t* t = json_object_get(s, "targetPerReplica");
    if (!t || !json_is_number(t) || json_number_value(t) <= 0 || json_number_value(t) > 1e12)
      r.error("scaling.targetPerReplica", "expects a number above 0: the metric's value one replica should carry");
    else rule.target_per_replica = json_number_value(t);
    if (const json_t* c = json_object_get(s, "cooldownSeconds"))
      if (auto n = r.integer(c, "scaling.cooldownSeconds", 0, kMaxCooldownSeconds)) rule.cooldown_seconds = static_cast<int>(*n);
    if (svc.min_replicas == svc.max_replicas)
      r.error("scaling", "needs room to scale: give minReplicas below maxReplicas");
    svc.scaling = rule;
  }
}

void read_fields(SpecReader& r, const json_t* root, WorkloadSpec& spec, SpecParse& out) {
  const char* key;
  json_t* v;
  json_object_foreach(const_cast<json_t*>(root), key, v) {
    std::string_view k = key;
    bool known = false;
    for (const char* f : kFields) known = known || k == f;
    if (!known) r.error(std::string(k.substr(0, 80)), "unknown field; see GET /openapi.json for the workload spec");
  }

  if (const json_t* name = json_object_get(root, "name")) {
    if (auto s = r.string(name, "name", 63)) {
      if (!matches(*s, "[a-z0-9]([-a-z0-9]{0,50}[a-z0-9])?"))
        r.error("name", "expects 1-52 lower-case letters, digits or '-', starting and ending with a letter or digit");
      else spec.name = *s;
    }
  } else {
    r.error("name", "is required");
  }
  if (const json_t* t = json_object_get(root, "target")) {
    if (auto s = r.string(t, "target", 32)) {
      if (*s == "slurm") spec.target = TargetKind::slurm;
      else if (*s == "kubernetes") spec.target = TargetKind::kubernetes;
      else r.error("target", "expects slurm or kubernetes");
    }
  }
  if (const json_t* k = json_object_get(root, "kind")) {
    if (auto s = r.string(k, "kind", 32)) {
      if (*s == "training") spec.kind = WorkloadKind::training;
      else if (*s == "service") spec.kind = WorkloadKind::service;
      else r.error("kind", "expects training or service");
    }
  }
  read_service_fields(r, root, spec);
  if (const json_t* w = json_object_get(root, "workspace")) r.option(spec.options, SafeOption::workspace, w, "workspace", false);
  if (const json_t* img = json_object_get(root, "image")) {
    if (auto s = r.string(img, "image", 512)) {
      if (s->empty() || has_control_chars(*s, false) || s->find(' ') != std::string::npos)
        r.error("image", "expects a container image reference such as docker.io/rocm/pytorch:latest");
      else spec.image = *s;
    }
  }
  if (spec.target == TargetKind::kubernetes && spec.image.empty() && !json_object_get(root, "image"))
    r.error("image", "is required for target kubernetes");

  const json_t* command = json_object_get(root, "command");
  const json_t* script = json_object_get(root, "script");
  if (command && script) r.error("command", "give either command or script, not both");
  if (!command && !script) r.error("command", "give command (an array of strings) or script (a string)");
  if (command) {
    if (!json_is_array(command) || json_array_size(command) == 0 || json_array_size(command) > kMaxListItems) {
      r.error("command", "expects a non-empty array of strings, such as [\"python\", \"train.py\"]");
    } else {
      for (std::size_t i = 0; i < json_array_size(command); ++i) {
        std::string path = "command[" + std::to_string(i) + "]";
        if (auto s = r.string(json_array_get(command, i), path)) spec.command.push_back(*s);
      }
    }
  }
  if (script) {
    if (auto s = r.string(script, "script", kMaxScriptBytes)) {
      if (s->empty()) r.error("script", "expects a non-empty shell script");
      else spec.script = *s;
    }
  }

  if (const json_t* n = json_object_get(root, "nodes"))
    if (auto v = r.integer(n, "nodes", 1, kMaxNodes)) spec.nodes = static_cast<int>(*v);
  if (const json_t* n = json_object_get(root, "gpusPerNode"))
    if (auto v = r.integer(n, "gpusPerNode", 0, kMaxGpusPerNode)) spec.gpus_per_node = static_cast<int>(*v);
  if (const json_t* n = json_object_get(root, "cpusPerTask"))
    if (auto v = r.integer(n, "cpusPerTask", 1, kMaxCpusPerTask)) spec.cpus_per_task = static_cast<int>(*v);
  if (const json_t* m = json_object_get(root, "memory")) {
    std::optional<long long> mb;
    if (json_is_integer(m) && json_integer_value(m) > 0) mb = json_integer_value(m);
    else if (json_is_string(m)) mb = memory_mb(json_string_value(m));
    if (!mb || *mb <= 0 || *mb > (1LL << 40)) r.error("memory", "expects a size per node such as \"16G\", \"512M\" or an integer of MiB");
    else spec.memory_mb = *mb;
  }
  if (const json_t* t = json_object_get(root, "timeLimit"))
    if (auto v = r.integer(t, "timeLimit", 1, kMaxTimeLimitMinutes)) spec.time_limit_minutes = static_cast<int>(*v);
  if (const json_t* v = json_object_get(root, "retries")) r.option(spec.options, SafeOption::retries, v, "retries", true);
  if (const json_t* v = json_object_get(root, "health")) r.option(spec.options, SafeOption::health, v, "health", false);
  if (const json_t* v = json_object_get(root, "hangTimeout"))
    r.option(spec.options, SafeOption::hang_timeout, v, "hangTimeout", true);
  if (const json_t* v = json_object_get(root, "minNodes")) r.option(spec.options, SafeOption::min_nodes, v, "minNodes", true);
  if (const json_t* v = json_object_get(root, "nodeMultiple"))
    r.option(spec.options, SafeOption::node_multiple, v, "nodeMultiple", true);
  if (spec.options.min_nodes && spec.target == TargetKind::kubernetes)
    r.error("minNodes", "the Kubernetes target runs a workload at its full size only (an Indexed Job of "
                        "fixed completions); drop minNodes, or use target slurm");
  else if (spec.options.min_nodes && *spec.options.min_nodes > spec.nodes)
    r.error("minNodes", "expects at most the workload's nodes (" + std::to_string(spec.nodes) + ")");
  else if (spec.options.node_multiple && !spec.options.min_nodes)
    r.error("nodeMultiple", "only applies with minNodes");
  else if (spec.options.node_multiple &&
           (*spec.options.min_nodes % *spec.options.node_multiple || spec.nodes % *spec.options.node_multiple))
    r.error("nodeMultiple", "must divide both minNodes and nodes");

  if (const json_t* c = json_object_get(root, "checkpoint")) {
    if (!json_is_object(c)) {
      r.error("checkpoint", "expects an object {dir, signal, graceSeconds}");
    } else {
      json_object_foreach(const_cast<json_t*>(c), key, v) {
        bool known = false;
        for (const char* f : kCheckpointFields) known = known || std::string_view(key) == f;
        if (!known) r.error("checkpoint." + std::string(std::string_view(key).substr(0, 80)), "unknown field; expected dir, signal or graceSeconds");
      }
      if (const json_t* d = json_object_get(c, "dir")) r.option(spec.options, SafeOption::ckpt_dir, d, "checkpoint.dir", false);
      const json_t* sig = json_object_get(c, "signal");
      const json_t* grace = json_object_get(c, "graceSeconds");
      std::optional<std::string> signal_name = sig ? r.string(sig, "checkpoint.signal", 32) : std::string("USR1");
      std::optional<long long> grace_s;
      if (grace) grace_s = r.integer(grace, "checkpoint.graceSeconds", 0, kMaxSignalLeadSeconds);
      if (signal_name && (sig || grace_s)) {
        if (signal_name->find('@') != std::string::npos) {
          r.error("checkpoint.signal", "expects a signal name such as USR1; give the lead time as checkpoint.graceSeconds");
        } else {
          std::string text = *signal_name + (grace_s ? "@" + std::to_string(*grace_s) : "");
          if (Status parsed = parse_option(spec.options, SafeOption::ckpt_signal, text); !parsed)
            r.error(sig ? "checkpoint.signal" : "checkpoint.graceSeconds", parsed.error());
        }
      }
      if (grace_s) spec.checkpoint_grace_seconds = static_cast<int>(*grace_s);
    }
  }

  if (const json_t* e = json_object_get(root, "env")) {
    if (!json_is_object(e) || json_object_size(e) > kMaxEnvEntries) {
      r.error("env", "expects an object of at most " + std::to_string(kMaxEnvEntries) + " NAME: \"value\" pairs");
    } else {
      json_object_foreach(const_cast<json_t*>(e), key, v) {
        std::string name(key);
        std::string path = "env." + name.substr(0, 80);
        if (!matches(name, "[A-Za-z_][A-Za-z0-9_]{0,127}")) {
          r.error(path, "expects a variable name of letters, digits and '_' (not starting with a digit)");
          continue;
        }
        if (name.starts_with("SAFE_") || name.starts_with("SLURM_")) {
          r.error(path, "SAFE_* and SLURM_* are set by SaFE and Slurm; use the spec's fields instead");
          continue;
        }
        if (auto s = r.string(v, path, 32768)) spec.env.emplace_back(name, *s);
      }
    }
  }
  if (const json_t* x = json_object_get(root, "excludedNodes")) {
    if (!json_is_array(x) || json_array_size(x) > kMaxListItems) {
      r.error("excludedNodes", "expects an array of node names");
    } else {
      for (std::size_t i = 0; i < json_array_size(x); ++i) {
        std::string path = "excludedNodes[" + std::to_string(i) + "]";
        auto s = r.string(json_array_get(x, i), path, 253);
        if (!s) continue;
        if (!matches(*s, "[A-Za-z0-9][A-Za-z0-9._-]*")) r.error(path, "expects a node name (letters, digits, '.', '_', '-')");
        else spec.excluded_nodes.push_back(*s);
      }
    }
  }
  if (const json_t* l = json_object_get(root, "labels")) {
    if (!json_is_object(l) || json_object_size(l) > kMaxLabels) {
      r.error("labels", "expects an object of at most " + std::to_string(kMaxLabels) + " key: \"value\" pairs");
    } else {
      json_object_foreach(const_cast<json_t*>(l), key, v) {
        std::string k(key);
        std::string path = "labels." + k.substr(0, 80);
        // Kubernetes label rules, so that labels carry over to either target unchanged.
        if (!matches(k, "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")) {
          r.error(path, "expects a label key of at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric");
          continue;
        }
        auto s = r.string(v, path, 63);
        if (!s) continue;
        if (!s->empty() && !matches(*s, "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"))
          r.error(path, "expects a label value of at most 63 letters, digits, '-', '_' or '.', starting and ending alphanumeric");
        else spec.labels[k] = *s;
      }
    }
  }
  (void)out;
}

}  // namespace

std::string_view to_string(TargetKind target) {
  return target == TargetKind::kubernetes ? "kubernetes" : "slurm";
}

std::string_view to_string(WorkloadKind kind) { return kind == WorkloadKind::service ? "service" : "training"; }

SpecParse parse_workload_spec(std::string_view body) {
  SpecParse out;
  json_error_t err;
  Json root = json_take(json_loadb(body.data(), body.size(), JSON_REJECT_DUPLICATES, &err));
  if (!root) {
    out.malformed = true;
    out.errors.push_back({"", std::string("invalid JSON at line ") + std::to_string(err.line) + ", column " +
                                  std::to_string(err.column) + ": " + err.text});
    return out;
  }
  if (!json_is_object(root.get())) {
    out.errors.push_back({"", "expects a JSON object (the workload spec)"});
    return out;
  }
  WorkloadSpec spec;
  SpecReader reader(out);
  read_fields(reader, root.get(), spec, out);
  if (out.errors.empty()) out.spec = std::move(spec);
  return out;
}

std::string workload_spec_json(const WorkloadSpec& spec) {
  Json j = json_take(json_object());
  json_t* o = j.get();
  json_set(o, "name", json_str(spec.name));
  json_set(o, "target", json_str(to_string(spec.target)));
  json_set(o, "kind", json_str(to_string(spec.kind)));
  if (!spec.image.empty()) json_set(o, "image", json_str(spec.image));
  if (!spec.command.empty()) {
    json_t* command = json_array();
    for (const auto& a : spec.command) json_array_append_new(command, json_str(a));
    json_set(o, "command", command);
  } else {
    json_set(o, "script", json_str(spec.script));
  }
  if (spec.kind == WorkloadKind::service) {
    const ServiceSpec& svc = spec.service;
    json_set(o, "replicas", json_integer(svc.replicas));
    json_set(o, "minReplicas", json_integer(svc.min_replicas));
    json_set(o, "maxReplicas", json_integer(svc.max_replicas));
    json_set(o, "port", json_integer(svc.port));
    auto probe = [](const ProbeSpec& p) {
      json_t* j = json_object();
      json_set(j, "httpPath", json_str(p.http_path));
      return j;
    };
    if (svc.readiness) json_set(o, "readinessProbe", probe(*svc.readiness));
    if (svc.liveness) json_set(o, "livenessProbe", probe(*svc.liveness));
    if (svc.scaling) {
      json_t* sc = json_object();
      json_set(sc, "metric", json_str(svc.scaling->metric));
      json_set(sc, "targetPerReplica", json_real(svc.scaling->target_per_replica));
      json_set(sc, "cooldownSeconds", json_integer(svc.scaling->cooldown_seconds));
      json_set(o, "scaling", sc);
    }
  } else {
    json_set(o, "nodes", json_integer(spec.nodes));
  }
  json_set(o, "gpusPerNode", json_integer(spec.gpus_per_node));
  json_set(o, "cpusPerTask", json_integer(spec.cpus_per_task));
  if (spec.memory_mb > 0) json_set(o, "memory", json_integer(spec.memory_mb));
  if (spec.time_limit_minutes > 0) json_set(o, "timeLimit", json_integer(spec.time_limit_minutes));
  const SafeOptions& opt = spec.options;
  if (opt.workspace) json_set(o, "workspace", json_str(*opt.workspace));
  if (opt.retries) json_set(o, "retries", json_integer(*opt.retries));
  if (opt.health) json_set(o, "health", json_str(opt.value_text(SafeOption::health)));
  if (opt.hang_timeout) json_set(o, "hangTimeout", json_integer(*opt.hang_timeout));
  if (opt.min_nodes) json_set(o, "minNodes", json_integer(*opt.min_nodes));
  if (opt.node_multiple) json_set(o, "nodeMultiple", json_integer(*opt.node_multiple));
  if (opt.ckpt_dir || opt.ckpt_signal) {
    json_t* c = json_object();
    if (opt.ckpt_dir) json_set(c, "dir", json_str(*opt.ckpt_dir));
    if (opt.ckpt_signal) json_set(c, "signal", json_str(signal_name(opt.ckpt_signal->signo)));
    if (spec.checkpoint_grace_seconds) json_set(c, "graceSeconds", json_integer(*spec.checkpoint_grace_seconds));
    json_set(o, "checkpoint", c);
  }
  json_t* env = json_object();
  for (const auto& [k, v] : spec.env) json_set(env, k.c_str(), json_str(v));
  json_set(o, "env", env);
  json_t* excluded = json_array();
  for (const auto& n : spec.excluded_nodes) json_array_append_new(excluded, json_str(n));
  json_set(o, "excludedNodes", excluded);
  json_t* labels = json_object();
  for (const auto& [k, v] : spec.labels) json_set(labels, k.c_str(), json_str(v));
  json_set(o, "labels", labels);
  return json_text(o);
}

}  // namespace safe::bridge
