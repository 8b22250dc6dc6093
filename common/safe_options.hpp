// The --safe-* job options: one table, one parser, shared by the SPANK plugin (client and job
// side), the job_submit plugin (which reads them back from the job's SPANK environment) and the
// REST bridge. Messages are the ones users see, so they say what is allowed.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.hpp"
#include "common/config.hpp"

namespace safe {

enum class SafeOption { workspace, retries, ckpt_dir, ckpt_signal, health, hang_timeout, min_nodes, node_multiple };
// How many there are: the SPANK plugin keeps a flag per option.
constexpr std::size_t kSafeOptionCount = static_cast<std::size_t>(SafeOption::node_multiple) + 1;

struct OptionSpec {
  SafeOption id;
  const char* name;     // without the leading dashes: "safe-workspace"
  const char* env;      // the environment variable that gives a default: "SAFE_WORKSPACE"
  const char* arginfo;  // shown in --help: "NAME"
  const char* usage;    // shown in --help
};

std::span<const OptionSpec> option_specs();
const OptionSpec& option_spec(SafeOption id);

struct CheckpointSignal {
  int signo = 0;
  std::optional<int> seconds;  // unset: the lead time comes from the config (checkpoint.grace_s)
  std::string to_string() const;  // "USR1@120", or "USR1" without a lead time
  bool operator==(const CheckpointSignal&) const = default;
};

constexpr int kMaxHangTimeoutSeconds = 7 * 86400;
constexpr int kMaxSignalLeadSeconds = 65535;
// Bounds --safe-min-nodes and --safe-node-multiple (Slurm's own node counts are 32-bit).
constexpr int kMaxJobNodes = 100000;

struct SafeOptions {
  std::optional<std::string> workspace;
  std::optional<int> retries;
  std::optional<std::string> ckpt_dir;
  std::optional<CheckpointSignal> ckpt_signal;
  std::optional<HealthLevel> health;
  std::optional<int> hang_timeout;
  std::optional<int> min_nodes;      // shrink-and-continue: the fewest nodes the job may run on
  std::optional<int> node_multiple;  // ... and the step its node count moves in

  bool any() const {
    return workspace || retries || ckpt_dir || ckpt_signal || health || hang_timeout || min_nodes || node_multiple;
  }
  // The canonical text of one option's value ("" when unset), as parse_option reads it back.
  std::string value_text(SafeOption id) const;
  bool operator==(const SafeOptions&) const = default;
};

// Parses `value` for option `id` into `options`. Fails with the user-facing message, e.g.
// "safe: --safe-retries expects an integer 0..50, got 'x'", and leaves `options` unchanged.
Status parse_option(SafeOptions& options, SafeOption id, std::string_view value);

// Fails with what is wrong with a checkpoint directory (relative, '..', whitespace or control chars).
Status check_checkpoint_dir(std::string_view path);

// How sbatch records an option in the job's SPANK environment: "_SLURM_SPANK_OPTION_safe_safe_retries".
std::string spank_env_name(SafeOption id);

// Reads the options from a job's SPANK environment ("NAME=VALUE" entries). Entries that are not
// SaFE's are ignored; a bad SaFE value yields its message in `errors`.
struct SpankEnvOptions {
  SafeOptions options;
  std::vector<std::string> errors;
};
SpankEnvOptions parse_spank_job_env(std::span<const std::string_view> env);

}  // namespace safe
