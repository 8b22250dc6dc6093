#include "common/safe_options.hpp"

#include <charconv>

#include "common/signal_name.hpp"

namespace safe {
namespace {

constexpr OptionSpec kSpecs[] = {
    {SafeOption::workspace, "safe-workspace", "SAFE_WORKSPACE", "NAME",
     "SaFE workspace to run in (quota, defaults and policy come from it)"},
    {SafeOption::retries, "safe-retries", "SAFE_RETRIES", "N",
     "automatic requeues after infrastructure failures (0..50; 0 disables)"},
    {SafeOption::ckpt_dir, "safe-ckpt-dir", "SAFE_CKPT_DIR", "PATH",
     "absolute path of the job's checkpoint directory (created if missing)"},
    {SafeOption::ckpt_signal, "safe-ckpt-signal", "SAFE_CKPT_SIGNAL", "SIG[@SECS]",
     "signal asking the job to checkpoint, SECS before its nodes are taken away (e.g. USR1@120)"},
    {SafeOption::health, "safe-health", "SAFE_HEALTH", "strict|standard|off",
     "how hard the GPU gate before the job checks its GPUs"},
    {SafeOption::hang_timeout, "safe-hang-timeout", "SAFE_HANG_TIMEOUT", "SECS",
     "requeue the job when it makes no progress for SECS seconds (0 = off)"},
    {SafeOption::min_nodes, "safe-min-nodes", "SAFE_MIN_NODES", "M",
     "when a failover cannot get all the job's nodes in time, run it on M or more (an elastic trainer)"},
    {SafeOption::node_multiple, "safe-node-multiple", "SAFE_NODE_MULTIPLE", "K",
     "with --safe-min-nodes: run on a multiple of K nodes only (e.g. pipeline stages)"},
};
static_assert(std::size(kSpecs) == kSafeOptionCount, "one spec per SafeOption");
static_assert(kMaxRetries == 50, "the --safe-retries usage text above says 0..50");

std::optional<long long> parse_decimal(std::string_view text) {
  if (text.empty() || text.size() > 12) return std::nullopt;
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Printable for a message: user input may hold anything, including control characters.
std::string shown(std::string_view value) {
  std::string out;
  for (char c : value.substr(0, 80)) out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (value.size() > 80) out += "...";
  return out;
}

std::string problem(const OptionSpec& spec, std::string_view what, std::string_view value) {
  return "safe: --" + std::string(spec.name) + " " + std::string(what) + ", got '" + shown(value) + "'";
}

bool valid_workspace_name(std::string_view v) {
  if (v.empty() || v.size() > 64) return false;
  for (char c : v)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
  return true;
}

}  // namespace

std::span<const OptionSpec> option_specs() { return kSpecs; }

const OptionSpec& option_spec(SafeOption id) {
  for (const auto& s : kSpecs)
    if (s.id == id) return s;
  return kSpecs[0];
}

std::string CheckpointSignal::to_string() const {
  std::string name = signal_name(signo);
  if (name.empty()) name = std::to_string(signo);
  return seconds ? name + "@" + std::to_string(*seconds) : name;
}

Status check_checkpoint_dir(std::string_view path) {
  if (path.empty() || path[0] != '/') return Error{"expects an absolute path (starting with /)"};
  if (path.size() > 1024) return Error{"expects a path of at most 1024 characters"};
  for (char c : path)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return Error{"expects a path without spaces or control characters"};
  std::size_t pos = 0;
  while (pos != std::string_view::npos) {
    std::size_t next = path.find('/', pos + 1);
    std::string_view part = path.substr(pos + 1, next == std::string_view::npos ? path.npos : next - pos - 1);
    if (part == "..") return Error{"expects a path without '..'"};
    pos = next;
  }
  return ok_status();
}

Status parse_option(SafeOptions& options, SafeOption id, std::string_view value) {
  const OptionSpec& spec = option_spec(id);
  switch (id) {
    case SafeOption::workspace:
      if (!valid_workspace_name(value))
        return Error{problem(spec, "expects a workspace name (1-64 letters, digits, '_' or '-')", value)};
      options.workspace = std::string(value);
      return ok_status();
    case SafeOption::retries: {
      auto n = parse_decimal(value);
      if (!n || *n < 0 || *n > kMaxRetries) return Error{problem(spec, "expects an integer 0.." + std::to_string(kMaxRetries), value)};
      options.retries = static_cast<int>(*n);
      return ok_status();
    }
    case SafeOption::ckpt_dir:
      if (Status dir = check_checkpoint_dir(value); !dir) return Error{problem(spec, dir.error(), value)};
      options.ckpt_dir = std::string(value);
      return ok_status();
    case SafeOption::ckpt_signal: {
      std::string_view name = value, secs;
      if (auto at = value.find('@'); at != std::string_view::npos) {
        name = value.substr(0, at);
        secs = value.substr(at + 1);
      }
      auto signo = checkpoint_signal_number(name);
      bool has_lead = value.find('@') != std::string_view::npos;
      std::optional<long long> lead = has_lead ? parse_decimal(secs) : 0;
      if (!signo || !lead || *lead < 0 || *lead > kMaxSignalLeadSeconds)
        return Error{problem(spec, "expects SIG[@SECS] with a catchable signal (USR1, USR2, TERM, INT, HUP, ...) and SECS 0..65535",
                       value)};
      options.ckpt_signal = CheckpointSignal{*signo, has_lead ? std::optional<int>(static_cast<int>(*lead)) : std::nullopt};
      return ok_status();
    }
    case SafeOption::health:
      if (value == "strict") options.health = HealthLevel::strict;
      else if (value == "standard") options.health = HealthLevel::standard;
      else if (value == "off") options.health = HealthLevel::off;
      else return Error{problem(spec, "expects strict, standard or off", value)};
      return ok_status();
    case SafeOption::hang_timeout: {
      auto n = parse_decimal(value);
      if (!n || *n < 0 || *n > kMaxHangTimeoutSeconds) return Error{problem(spec, "expects seconds 0..604800", value)};
      options.hang_timeout = static_cast<int>(*n);
      return ok_status();
    }
    case SafeOption::min_nodes:
    case SafeOption::node_multiple: {
      auto n = parse_decimal(value);
      if (!n || *n < 1 || *n > kMaxJobNodes)
        return Error{problem(spec, "expects a node count 1.." + std::to_string(kMaxJobNodes), value)};
      (id == SafeOption::min_nodes ? options.min_nodes : options.node_multiple) = static_cast<int>(*n);
      return ok_status();
    }
  }
  return Error{"safe: unknown option"};
}

std::string SafeOptions::value_text(SafeOption id) const {
  switch (id) {
    case SafeOption::workspace: return workspace.value_or("");
    case SafeOption::retries: return retries ? std::to_string(*retries) : "";
    case SafeOption::ckpt_dir: return ckpt_dir.value_or("");
    case SafeOption::ckpt_signal:
      return ckpt_signal ? ckpt_signal->to_string() : "";
    case SafeOption::health: return health ? std::string(to_string(*health)) : "";
    case SafeOption::hang_timeout: return hang_timeout ? std::to_string(*hang_timeout) : "";
    case SafeOption::min_nodes: return min_nodes ? std::to_string(*min_nodes) : "";
    case SafeOption::node_multiple: return node_multiple ? std::to_string(*node_multiple) : "";
  }
  return "";
}

std::string spank_env_name(SafeOption id) {
  // Slurm's own rule: "_SLURM_SPANK_OPTION_" + plugin + "_" + option, non-alphanumerics as '_'.
  std::string name = std::string("_SLURM_SPANK_OPTION_safe_") + option_spec(id).name;
  for (std::size_t i = 20; i < name.size(); ++i)
    if (!isalnum(static_cast<unsigned char>(name[i]))) name[i] = '_';
  return name;
}

SpankEnvOptions parse_spank_job_env(std::span<const std::string_view> env) {
  SpankEnvOptions out;
  for (std::string_view entry : env) {
    if (!entry.starts_with("_SLURM_SPANK_OPTION_safe_")) continue;
    auto eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq), value = entry.substr(eq + 1);
    for (const auto& spec : kSpecs) {
      if (name != spank_env_name(spec.id)) continue;
      if (Status parsed = parse_option(out.options, spec.id, value); !parsed) out.errors.push_back(parsed.error());
    }
  }
  return out;
}

}  // namespace safe
