// The schema of safe.yaml: which keys exist, their types and allowed values. Defaults are the
// member initialisers in config.hpp. Every reader call also names its key, so unknown keys can be
// rejected and the whole key list can be enumerated for the documentation test.
#include <algorithm>
#include <functional>
#include <mutex>
#include <optional>
#include <regex>
#include <set>

#include "common/config.hpp"
#include "common/config_schema.hpp"
#include "common/health_check.hpp"
#include "common/hostlist.hpp"
#include "common/signal_name.hpp"
#include "common/yaml_document.hpp"

namespace safe {
namespace {

using yaml::Node;
using Validator = std::function<std::optional<std::string>(const std::string&)>;

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Shared by all scopes of one parse: where errors go, and (optionally) the key paths seen.
struct ReadContext {
  std::vector<ConfigError>& errors;
  const std::string& file;
  std::vector<std::string>* key_paths;

  void error(const yaml::Mark& mark, std::string message) const {
    errors.push_back({file, mark.line, mark.column, std::move(message)});
  }
};

std::string quoted(const Node& n) {
  if (n.kind != Node::Kind::scalar) return std::string(n.kind_name());
  if (n.is_null()) return "an empty value";
  return "'" + n.value + "'";
}

// Reads the keys of one YAML mapping (or of an absent one: then every field keeps its default).
class MapScope {
 public:
  MapScope(const ReadContext& ctx, const Node* node, std::string path, std::string schema_path)
      : ctx_(ctx), node_(node), path_(std::move(path)), schema_path_(std::move(schema_path)) {}

  void integer(const char* key, long long& out, long long min, long long max) {
    const Node* v = lookup(key);
    if (!v) return;
    auto parsed = parse_int(*v);
    if (!parsed || *parsed < min || *parsed > max) {
      ctx_.error(v->mark, name(key) + ": expects an integer " + std::to_string(min) + ".." + std::to_string(max) +
                              ", got " + quoted(*v));
      return;
    }
    out = *parsed;
  }
  void integer(const char* key, int& out, int min, int max) {
    long long wide = out;
    integer(key, wide, min, max);
    out = static_cast<int>(wide);
  }

  void boolean(const char* key, bool& out) {
    const Node* v = lookup(key);
    if (!v) return;
    if (v->kind == Node::Kind::scalar && v->plain && (v->value == "true" || v->value == "false")) {
      out = v->value == "true";
      return;
    }
    ctx_.error(v->mark, name(key) + ": expects true or false, got " + quoted(*v));
  }

  void string(const char* key, std::string& out, const Validator& validate = nullptr) {
    const Node* v = lookup(key);
    if (!v) return;
    if (v->kind != Node::Kind::scalar) {
      ctx_.error(v->mark, name(key) + ": expects a string, got " + std::string(v->kind_name()));
      return;
    }
    std::string value = v->is_null() ? std::string() : v->value;
    if (validate) {
      if (auto problem = validate(value)) {
        ctx_.error(v->mark, name(key) + ": " + *problem + ", got " + quoted(*v));
        return;
      }
    }
    out = value;
  }

  template <class E>
  void enumeration(const char* key, E& out, std::initializer_list<std::pair<const char*, E>> allowed) {
    const Node* v = lookup(key);
    if (!v) return;
    if (v->kind == Node::Kind::scalar) {
      for (const auto& [text, value] : allowed) {
        if (v->value == text) {
          out = value;
          return;
        }
      }
    }
    std::string names;
    for (const auto& [text, value] : allowed) names += (names.empty() ? "" : ", ") + std::string(text);
    ctx_.error(v->mark, name(key) + ": expects one of " + names + ", got " + quoted(*v));
  }

  void string_list(const char* key, std::vector<std::string>& out, const Validator& validate = nullptr) {
    const Node* v = lookup(key);
    if (!v) return;
    if (v->kind != Node::Kind::sequence) {
      ctx_.error(v->mark, name(key) + ": expects a list of strings, got " + std::string(v->kind_name()));
      return;
    }
    std::vector<std::string> values;
    for (std::size_t i = 0; i < v->items.size(); ++i) {
      const Node& item = v->items[i];
      std::string item_name = name(key) + "[" + std::to_string(i) + "]";
      if (item.kind != Node::Kind::scalar || item.is_null()) {
        ctx_.error(item.mark, item_name + ": expects a string, got " + std::string(item.kind_name()));
        return;
      }
      if (validate) {
        if (auto problem = validate(item.value)) {
          ctx_.error(item.mark, item_name + ": " + *problem + ", got " + quoted(item));
          return;
        }
      }
      values.push_back(item.value);
    }
    out = std::move(values);
  }

  void int_list(const char* key, std::vector<int>& out, int min, int max) {
    const Node* v = lookup(key);
    if (!v) return;
    if (v->kind != Node::Kind::sequence) {
      ctx_.error(v->mark, name(key) + ": expects a list of integers, got " + std::string(v->kind_name()));
      return;
    }
    std::vector<int> values;
    for (std::size_t i = 0; i < v->items.size(); ++i) {
      auto parsed = parse_int(v->items[i]);
      if (!parsed || *parsed < min || *parsed > max) {
        ctx_.error(v->items[i].mark, name(key) + "[" + std::to_string(i) + "]: expects an integer " +
                                         std::to_string(min) + ".." + std::to_string(max) + ", got " +
                                         quoted(v->items[i]));
        return;
      }
      values.push_back(static_cast<int>(*parsed));
    }
    out = std::move(values);
  }

  // A nested mapping; an absent one reads as all defaults.
  template <class T>
  void section(const char* key, T& out, void (*read)(MapScope&, T&)) {
    const Node* v = lookup(key);
    if (v && v->kind != Node::Kind::mapping && !v->is_null()) {
      ctx_.error(v->mark, name(key) + ": expects a mapping of keys, got " + std::string(v->kind_name()));
      return;
    }
    MapScope inner(ctx_, v && !v->is_null() ? v : nullptr, name(key), schema_name(key));
    read(inner, out);
    inner.finish();
  }

  // A list of mappings, e.g. workspaces.
  template <class T>
  void list_of(const char* key, std::vector<T>& out, void (*read)(MapScope&, T&)) {
    const Node* v = lookup(key);
    std::string schema_item = schema_name(key) + "[]";
    if (ctx_.key_paths && (!v || v->kind != Node::Kind::sequence || v->items.empty())) {
      T probe{};  // enumerate the item keys even when the list is empty
      MapScope inner(ctx_, nullptr, schema_item, schema_item);
      read(inner, probe);
    }
    if (!v || v->is_null()) return;
    if (v->kind != Node::Kind::sequence) {
      ctx_.error(v->mark, name(key) + ": expects a list, got " + std::string(v->kind_name()));
      return;
    }
    std::vector<T> values;
    for (std::size_t i = 0; i < v->items.size(); ++i) {
      const Node& item = v->items[i];
      std::string item_name = name(key) + "[" + std::to_string(i) + "]";
      if (item.kind != Node::Kind::mapping) {
        ctx_.error(item.mark, item_name + ": expects a mapping of keys, got " + std::string(item.kind_name()));
        continue;
      }
      T value{};
      MapScope inner(ctx_, &item, item_name, schema_item);
      read(inner, value);
      inner.finish();
      values.push_back(std::move(value));
    }
    out = std::move(values);
  }

  // The node of a key this scope has read, for cross-field checks that need a position.
  yaml::Mark mark_of(const char* key) const {
    if (node_)
      for (const auto& [k, v] : node_->entries)
        if (k.value == key) return v.mark;
    return node_ ? node_->mark : yaml::Mark{1, 1};
  }
  bool has(const char* key) const {
    if (node_)
      for (const auto& [k, v] : node_->entries)
        if (k.value == key) return true;
    return false;
  }
  std::string name(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  // A key an earlier release had here: known (no did-you-mean), but an error naming its new place.
  void moved(const char* key, const std::string& to) {
    known_.insert(key);
    if (has(key)) ctx_.error(mark_of(key), name(key) + " has moved to " + to + "; move the setting there");
  }
  const ReadContext& context() const { return ctx_; }

  void finish() {
    if (!node_) return;
    for (const auto& [k, v] : node_->entries) {
      if (known_.count(k.value)) continue;
      std::string message = "unknown key '" + k.value + "'" + (path_.empty() ? "" : " in " + path_);
      std::string best;
      std::size_t best_distance = 3;
      for (const auto& candidate : known_) {
        std::size_t d = edit_distance(k.value, candidate);
        if (d < best_distance) best_distance = d, best = candidate;
      }
      if (!best.empty()) {
        message += " (did you mean '" + best + "'?)";
      } else {
        std::string all;
        for (const auto& candidate : known_) all += (all.empty() ? "" : ", ") + candidate;
        message += " (allowed: " + all + ")";
      }
      ctx_.error(k.mark, message);
    }
  }

 private:
  const Node* lookup(const char* key) {
    known_.insert(key);
    if (ctx_.key_paths) ctx_.key_paths->push_back(schema_name(key));
    if (!node_) return nullptr;
    for (const auto& [k, v] : node_->entries)
      if (k.value == key) return &v;
    return nullptr;
  }
  std::string schema_name(const char* key) const { return schema_path_.empty() ? key : schema_path_ + "." + key; }

  static std::optional<long long> parse_int(const Node& n) {
    if (n.kind != Node::Kind::scalar || !n.plain || n.value.empty() || n.value.size() > 18) return std::nullopt;
    std::size_t start = n.value[0] == '-' ? 1 : 0;
    if (start == n.value.size() || n.value.find_first_not_of("0123456789", start) != std::string::npos)
      return std::nullopt;
    return std::stoll(n.value);
  }

  const ReadContext& ctx_;
  const Node* node_;
  std::string path_;
  std::string schema_path_;
  std::set<std::string> known_;
};

// --- value rules ---------------------------------------------------------------------------

std::optional<std::string> absolute_path_rule(const std::string& v, bool allow_empty) {
  if (v.empty()) return allow_empty ? std::nullopt : std::optional<std::string>("expects an absolute path");
  if (v[0] != '/') return "expects an absolute path (starting with /)";
  if (v.find('\0') != std::string::npos) return "must not contain NUL";
  for (std::size_t pos = 0; pos != std::string::npos;) {
    std::size_t next = v.find('/', pos + 1);
    if (v.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1) == "..")
      return "must not contain '..'";
    pos = next;
  }
  return std::nullopt;
}
const Validator kAbsolutePath = [](const std::string& v) { return absolute_path_rule(v, false); };
const Validator kOptionalAbsolutePath = [](const std::string& v) { return absolute_path_rule(v, true); };

// Compiled on first use: this file is linked into spank_safe.so, which every sbatch/srun loads,
// and compiling regexes at load time would slow down every submission.
Validator regex_rule(const char* pattern, const char* description) {
  struct Lazy {
    std::once_flag once;
    std::optional<std::regex> re;
  };
  auto lazy = std::make_shared<Lazy>();
  return [lazy, pattern, description](const std::string& v) -> std::optional<std::string> {
    std::call_once(lazy->once, [&] { lazy->re.emplace(pattern); });
    if (std::regex_match(v, *lazy->re)) return std::nullopt;
    return std::string(description);
  };
}
const Validator kWorkspaceName =
    regex_rule("[A-Za-z0-9_-]{1,64}", "expects a workspace name of 1-64 letters, digits, '_' or '-'");
const Validator kPrincipalName = regex_rule("[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}\\$?", "expects a user or group name");
const Validator kSlurmName =
    regex_rule("([A-Za-z0-9_.-]{1,64})?", "expects a Slurm name (letters, digits, '_', '.', '-') or nothing");
const Validator kHostList = [](const std::string& v) -> std::optional<std::string> {
  static const std::regex re("[A-Za-z0-9_.,\\[\\]-]{0,4096}");  // first use only
  if (!std::regex_match(v, re)) return std::string("expects a Slurm host list such as n[1-4],gpu07");
  if (expand_hostlist(v).size() > 100000) return std::string("expects at most 100000 nodes");
  return std::nullopt;
};
const Validator kListenAddress = [](const std::string& v) -> std::optional<std::string> {
  static const std::regex re("(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9_.-]+):([0-9]{1,5})");  // first use only
  std::smatch m;
  if (!std::regex_match(v, m, re) || std::stoi(m[2]) < 1 || std::stoi(m[2]) > 65535)
    return "expects HOST:PORT with a port 1..65535 (e.g. 127.0.0.1:9810)";
  return std::nullopt;
};
const Validator kCheckpointSignal = [](const std::string& v) -> std::optional<std::string> {
  if (checkpoint_signal_number(v)) return std::nullopt;
  return "expects a signal a job can catch, e.g. USR1, USR2, TERM, INT, HUP";
};
const Validator kHealthCheckName = [](const std::string& v) -> std::optional<std::string> {
  if (is_health_check_name(v)) return std::nullopt;
  std::string names;
  for (const char* n : kHealthCheckNames) names += (names.empty() ? "" : ", ") + std::string(n);
  return "expects a check name: " + names;
};
const Validator kFailureClass = regex_rule("node_fault|infra_transient|user_error|preempted|timeout|cancelled|unknown",
                                           "expects a failure class: node_fault, infra_transient, user_error, "
                                           "preempted, timeout, cancelled or unknown");

// --- sections ------------------------------------------------------------------------------

void read_health_level(MapScope& s, const char* key, HealthLevel& out) {
  s.enumeration(key, out, {{"strict", HealthLevel::strict}, {"standard", HealthLevel::standard}, {"off", HealthLevel::off}});
}

// Retry defaults and caps, read the same way for a workspace and for jobs outside workspaces.
void read_retry_policy(MapScope& s, int& default_retries, int& max_retries, HealthLevel& default_health) {
  s.integer("default_retries", default_retries, 0, kMaxRetries);
  s.integer("max_retries", max_retries, 0, kMaxRetries);
  read_health_level(s, "default_health", default_health);
  if (default_retries > max_retries)
    s.context().error(s.mark_of("default_retries"), s.name("default_retries") + ": " + std::to_string(default_retries) +
                                                        " exceeds max_retries " + std::to_string(max_retries));
}

void read_workspace(MapScope& s, WorkspaceConfig& w) {
  s.string("name", w.name, kWorkspaceName);
  if (!s.has("name") && s.context().key_paths == nullptr)
    s.context().error(s.mark_of("name"), s.name("name") + ": is required");
  s.integer("gpu_quota", w.gpu_quota, 0, 1000000);
  s.string("partition", w.partition, kSlurmName);
  s.string("account", w.account, kSlurmName);
  s.string("qos", w.qos, kSlurmName);
  s.string_list("users", w.users, kPrincipalName);
  s.string_list("groups", w.groups, kPrincipalName);
  read_retry_policy(s, w.default_retries, w.max_retries, w.default_health);
}

void read_admission(MapScope& s, AdmissionConfig& a) {
  s.boolean("require_workspace", a.require_workspace);
  read_retry_policy(s, a.default_retries, a.max_retries, a.default_health);
}

void read_mount(MapScope& s, MountRequirement& m) {
  s.string("path", m.path, kAbsolutePath);
  if (!s.has("path") && s.context().key_paths == nullptr)
    s.context().error(s.mark_of("path"), s.name("path") + ": is required");
  s.integer("min_free_gib", m.min_free_gib, 0, 1 << 30);
  s.integer("min_free_inodes_percent", m.min_free_inodes_percent, 0, 100);
}

void read_thresholds(MapScope& s, HealthThresholds& t) {
  s.integer("ecc_correctable_max", t.ecc_correctable_max, 0, 1'000'000'000'000LL);
  s.integer("ecc_uncorrectable_max", t.ecc_uncorrectable_max, 0, 1'000'000'000'000LL);
  s.integer("retired_pages_max", t.retired_pages_max, 0, 1'000'000);
  s.integer("pcie_replay_max", t.pcie_replay_max, 0, 1'000'000'000'000LL);
  s.integer("temperature_max_c", t.temperature_max_c, 30, 150);
  s.integer("temperature_margin_c", t.temperature_margin_c, 0, 50);
  s.integer("stray_gpu_memory_mib", t.stray_gpu_memory_mib, 0, 1 << 20);
  s.integer("kmsg_window_s", t.kmsg_window_s, 1, 30 * 86400);
  s.integer("pcie_bus_error_storm_count", t.pcie_bus_error_storm_count, 1, 100'000'000);
  s.integer("pcie_bus_error_storm_window_s", t.pcie_bus_error_storm_window_s, 1, 86400);
  s.int_list("xid_critical", t.xid_critical, 1, 1000);
  s.int_list("xid_warning", t.xid_warning, 1, 1000);
}

void read_health(MapScope& s, HealthConfig& h) {
  s.enumeration("backend", h.backend,
                {{"auto", GpuBackendKind::auto_detect}, {"rsmi", GpuBackendKind::rsmi},
                 {"nvml", GpuBackendKind::nvml}, {"sim", GpuBackendKind::sim}});
  s.string("sim_dir", h.sim_dir, kAbsolutePath);
  s.string("state_dir", h.state_dir, kAbsolutePath);
  s.string("node_name", h.node_name, kSlurmName);
  s.integer("expected_gpus", h.expected_gpus, 0, 64);
  s.integer("interval_s", h.interval_s, 5, 86400);
  s.integer("jitter_s", h.jitter_s, 0, 3600);
  s.integer("check_timeout_s", h.check_timeout_s, 1, 50);
  s.integer("fail_runs_before_drain", h.fail_runs_before_drain, 1, 100);
  s.integer("critical_fail_runs_before_drain", h.critical_fail_runs_before_drain, 1, 100);
  s.integer("pass_runs_before_resume", h.pass_runs_before_resume, 1, 100);
  s.integer("unknown_runs_before_fail", h.unknown_runs_before_fail, 1, 100);
  s.integer("slurm_timeout_s", h.slurm_timeout_s, 1, 30);
  s.integer("gate_timeout_s", h.gate_timeout_s, 1, 30);
  s.string_list("disabled_checks", h.disabled_checks, kHealthCheckName);
  s.integer("min_memory_gib", h.min_memory_gib, 0, 1 << 20);
  s.list_of("mounts", h.mounts, read_mount);
  s.integer("ib_min_rate_gbps", h.ib_min_rate_gbps, 0, 10000);
  s.string("numa_reference", h.numa_reference, kOptionalAbsolutePath);
  s.string("metrics_dir", h.metrics_dir, kOptionalAbsolutePath);
  s.string("controller_url", h.controller_url,
           regex_rule("(https?://[A-Za-z0-9.:\\[\\]_-]+(/[^ ]*)?)?",
                      "expects http://HOST:PORT of safed as the nodes reach it, or \"\" for controller.ha or controller.listen"));
  s.section("thresholds", h.thresholds, read_thresholds);
  // A run waits at most check_timeout_s for the checks, then may call scontrol once more.
  if (h.check_timeout_s + h.slurm_timeout_s > 55)
    s.context().error(s.mark_of("check_timeout_s"),
                      s.name("check_timeout_s") + " + slurm_timeout_s = " +
                          std::to_string(h.check_timeout_s + h.slurm_timeout_s) +
                          " s: keep it at most 55 (Slurm kills HealthCheckProgram after 60 s)");
}

void read_spare_pool(MapScope& s, SparePoolConfig& p) {
  s.string("partition", p.partition, kSlurmName);
  if (!s.has("partition") && s.context().key_paths == nullptr)
    s.context().error(s.mark_of("partition"), s.name("partition") + ": is required");
  s.integer("count", p.count, 0, 100000);
  s.string("nodes", p.nodes, kHostList);
  s.string_list("workspaces", p.workspaces, kWorkspaceName);
  if (s.context().key_paths) return;
  std::size_t named = expand_hostlist(p.nodes).size();
  if (p.count == 0 && named == 0)
    s.context().error(s.mark_of("count"), s.name("count") + ": set count, nodes, or both (count 0 and no nodes keeps no spare)");
  if (named > 0 && static_cast<std::size_t>(p.count) > named)
    s.context().error(s.mark_of("count"), s.name("count") + ": " + std::to_string(p.count) + " exceeds the " +
                                              std::to_string(named) + " nodes named in nodes");
}

void read_failover(MapScope& s, FailoverConfig& f) {
  s.int_list("infra_exit_codes", f.infra_exit_codes, 1, 255);
  s.string_list("retry_classes", f.retry_classes, kFailureClass);
  s.integer("backoff_initial_s", f.backoff_initial_s, 0, 86400);
  s.integer("backoff_max_s", f.backoff_max_s, 0, 7 * 86400);
  s.integer("rate_limit_per_minute", f.rate_limit_per_minute, 1, 100000);
  s.integer("lemon_faults", f.lemon_faults, 1, 1000);
  s.integer("lemon_window_s", f.lemon_window_s, 60, 90 * 86400);
  s.list_of("spares", f.spares, read_spare_pool);
  s.integer("shrink_after_s", f.shrink_after_s, 0, 7 * 86400);
  for (std::size_t i = 0; i < f.spares.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (f.spares[i].partition == f.spares[j].partition)
        s.context().error(s.mark_of("spares"), s.name("spares") + "[" + std::to_string(i) + "].partition: " +
                                                   f.spares[i].partition + " has a pool already (spares[" +
                                                   std::to_string(j) + "]); one pool per partition");
  if (f.backoff_initial_s > f.backoff_max_s)
    s.context().error(s.mark_of("backoff_initial_s"), s.name("backoff_initial_s") + ": " +
                                                          std::to_string(f.backoff_initial_s) +
                                                          " exceeds backoff_max_s " + std::to_string(f.backoff_max_s));
}

void read_checkpoint(MapScope& s, CheckpointConfig& c) {
  s.string("signal", c.signal, kCheckpointSignal);
  s.integer("grace_s", c.grace_s, 0, 3600);
  s.string("complete_marker", c.complete_marker,
           regex_rule("[A-Za-z0-9_.-]{1,128}", "expects a plain file name (letters, digits, '_', '.', '-')"));
}

void read_slurmd_probe(MapScope& s, SlurmdProbeConfig& p) {
  s.integer("interval_ms", p.interval_ms, 0, 60000);
  s.integer("timeout_ms", p.timeout_ms, 50, 10000);
  s.integer("failures", p.failures, 1, 100);
  s.integer("restart_grace_s", p.restart_grace_s, 0, 3600);
  s.integer("max_in_flight", p.max_in_flight, 1, 10000);
  if (p.interval_ms > 0 && p.interval_ms < 200)
    s.context().error(s.mark_of("interval_ms"),
                      s.name("interval_ms") + ": " + std::to_string(p.interval_ms) + ": use 0 (off) or 200..60000");
}

void read_ha(MapScope& s, HaConfig& h) {
  s.string_list("etcd_endpoints", h.etcd_endpoints,
                regex_rule("https?://[A-Za-z0-9.:\\[\\]_-]+", "expects http://HOST:PORT of an etcd member"));
  s.string("prefix", h.prefix, regex_rule("/[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*", "expects a key prefix such as /safe"));
  s.integer("lease_ttl_s", h.lease_ttl_s, 2, 60);
  s.integer("snapshot_every", h.snapshot_every, 2, 1000000);
}

void read_controller(MapScope& s, ControllerConfig& c) {
  s.string("state_dir", c.state_dir, kAbsolutePath);
  s.string("listen", c.listen, kListenAddress);
  s.integer("poll_interval_ms", c.poll_interval_ms, 100, 60000);
  s.integer("keep_history_days", c.keep_history_days, 0, 36500);
  s.section("slurmd_probe", c.slurmd_probe, read_slurmd_probe);
  s.section("ha", c.ha, read_ha);
}

void read_leader_election(MapScope& s, LeaderElectionConfig& l) {
  s.string("lease", l.lease,
           regex_rule("([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)?",
                      "expects a Kubernetes object name (RFC 1123 subdomain) such as safe-kube-bridge, or \"\" for none"));
  s.integer("lease_duration_s", l.lease_duration_s, 2, 3600);
  s.integer("renew_deadline_s", l.renew_deadline_s, 1, 3600);
  s.integer("retry_period_s", l.retry_period_s, 1, 3600);
  // A leader must stop before a candidate may take over, and try more than once before that.
  if (l.renew_deadline_s >= l.lease_duration_s)
    s.context().error(s.mark_of("renew_deadline_s"), s.name("renew_deadline_s") + ": " +
                                                         std::to_string(l.renew_deadline_s) +
                                                         " s: keep it below lease_duration_s (" +
                                                         std::to_string(l.lease_duration_s) + " s)");
  else if (l.retry_period_s >= l.renew_deadline_s)
    s.context().error(s.mark_of("retry_period_s"), s.name("retry_period_s") + ": " + std::to_string(l.retry_period_s) +
                                                       " s: keep it below renew_deadline_s (" +
                                                       std::to_string(l.renew_deadline_s) + " s)");
}

void read_kubernetes(MapScope& s, KubernetesConfig& k) {
  s.string("kubeconfig", k.kubeconfig, kOptionalAbsolutePath);
  s.string("namespace", k.namespace_,
           regex_rule("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", "expects a Kubernetes namespace name (RFC 1123 label)"));
  s.string("gpu_resource", k.gpu_resource,
           regex_rule("[A-Za-z0-9.-]+/[A-Za-z0-9_.-]+", "expects an extended resource name such as amd.com/gpu"));
  s.string("checkpoint_pvc", k.checkpoint_pvc, kSlurmName);
  s.string("checkpoint_host_path", k.checkpoint_host_path, kOptionalAbsolutePath);
  s.string("setup_image", k.setup_image,
           regex_rule("[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}", "expects a container image reference"));
  s.section("leader_election", k.leader_election, read_leader_election);
  if (!k.checkpoint_pvc.empty() && !k.checkpoint_host_path.empty())
    s.context().error(s.mark_of("checkpoint_host_path"),
                      s.name("checkpoint_host_path") + ": set either checkpoint_pvc or checkpoint_host_path, not both");
}

void read_kube_bridge(MapScope& s, KubeBridgeConfig& k) {
  s.string("listen", k.listen, kListenAddress);
  s.string("tls_cert", k.tls_cert, kOptionalAbsolutePath);
  s.string("tls_key", k.tls_key, kOptionalAbsolutePath);
  s.moved("jwt_key_file", "auth.jwt_key_file");
  s.moved("munge_auth", "auth.munge");
  s.moved("admins", "auth.admins");
  s.integer("max_body_bytes", k.max_body_bytes, 1024, 64 << 20);
  s.integer("max_connections", k.max_connections, 16, 1000000);
  s.integer("max_connections_per_client", k.max_connections_per_client, 1, 1000000);
  s.string("slurm_work_dir", k.slurm_work_dir, kOptionalAbsolutePath);
  s.string("controller_url", k.controller_url,
           regex_rule("(https?://[A-Za-z0-9.:\\[\\]_-]+(/[^ ]*)?)?", "expects http://HOST:PORT of safed, or \"\" for none"));
  s.string("state_dir", k.state_dir, kOptionalAbsolutePath);
  s.section("kubernetes", k.kubernetes, read_kubernetes);
  if (k.tls_cert.empty() != k.tls_key.empty())
    s.context().error(s.mark_of(k.tls_cert.empty() ? "tls_key" : "tls_cert"),
                      s.name("tls_cert") + " and " + s.name("tls_key") + ": set both to enable TLS, or neither");
}

void read_auth(MapScope& s, AuthConfig& a) {
  s.string_list("admins", a.admins, kPrincipalName);
  s.boolean("munge", a.munge);
  s.string("jwt_key_file", a.jwt_key_file, kOptionalAbsolutePath);
}

void read_root(MapScope& s, SafeConfig& c) {
  s.list_of("workspaces", c.workspaces, read_workspace);
  s.section("admission", c.admission, read_admission);
  s.section("health", c.health, read_health);
  s.section("failover", c.failover, read_failover);
  s.section("checkpoint", c.checkpoint, read_checkpoint);
  s.section("controller", c.controller, read_controller);
  s.section("kube_bridge", c.kube_bridge, read_kube_bridge);
  s.section("auth", c.auth, read_auth);
}

void check_workspace_names(const yaml::Node& root, const SafeConfig& config, const ReadContext& ctx) {
  // Positions come from the document: the config structs carry none.
  const yaml::Node* list = nullptr;
  for (const auto& [k, v] : root.entries)
    if (k.value == "workspaces" && v.kind == yaml::Node::Kind::sequence) list = &v;
  if (!list) return;
  std::vector<std::pair<std::string, int>> seen;  // name, line
  for (std::size_t i = 0; i < list->items.size() && i < config.workspaces.size(); ++i) {
    const std::string& name = config.workspaces[i].name;
    yaml::Mark mark = list->items[i].mark;
    for (const auto& [k, v] : list->items[i].entries)
      if (k.value == "name") mark = v.mark;
    auto it = std::find_if(seen.begin(), seen.end(), [&](const auto& p) { return p.first == name; });
    if (it != seen.end()) {
      ctx.error(mark, "workspaces[" + std::to_string(i) + "].name: duplicate workspace name '" + name +
                          "' (first defined on line " + std::to_string(it->second) + ")");
    } else {
      seen.emplace_back(name, mark.line);
    }
  }
}

}  // namespace

void read_config_document(const yaml::Node& root, SafeConfig& out, std::vector<ConfigError>& errors,
                          const std::string& file, std::vector<std::string>* key_paths) {
  ReadContext ctx{errors, file, key_paths};
  if (root.kind != Node::Kind::mapping) {
    if (!root.is_null()) ctx.error(root.mark, "the top level must be a mapping of sections (workspaces, health, ...)");
    return;
  }
  MapScope scope(ctx, &root, "", "");
  read_root(scope, out);
  scope.finish();
  if (!key_paths) check_workspace_names(root, out, ctx);
}

}  // namespace safe
