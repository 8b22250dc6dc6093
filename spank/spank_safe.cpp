// spank_safe.so: the --safe-* options for sbatch, salloc and srun, and the SAFE_* environment of
// the job's tasks. A thin boundary: parsing and policy live in common/ (safe_options,
// job_environment, checkpoint_scan); this file only moves values between Slurm and those.
//
// Client side (sbatch/salloc/srun): options are syntax-checked as Slurm hands them over, so a typo
// fails before anything reaches slurmctld. Values given only through SAFE_* environment variables
// are written into the job's SPANK environment under the same names sbatch uses for command-line
// options, so the job_submit plugin sees one format whatever the source.
// Job side (slurmstepd, in each task): works out the job's effective settings, creates the
// checkpoint directory as the job's user, finds the checkpoint to resume from and exports SAFE_*.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include "common/checkpoint_fence.hpp"
#include "common/checkpoint_scan.hpp"
#include "common/config.hpp"
#include "common/job_environment.hpp"
#include "common/job_user.hpp"
#include "common/safe_options.hpp"

// Slurm finds these by name; SPANK_PLUGIN() would give them internal linkage in C++.
extern "C" {
extern const char plugin_name[] = "safe";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

struct PluginState {
  safe::SafeOptions given;                  // values from the command line (or #SBATCH lines)
  std::array<bool, safe::kSafeOptionCount> seen{};    // which options the command line gave
  std::string config_path;                  // plugstack argument config=PATH, else $SAFE_CONFIG
  bool remote_init_failed = false;          // slurm_spank_init failed in slurmstepd
};
PluginState g_state;

int option_index(safe::SafeOption id) { return static_cast<int>(id); }

// Slurm may call this twice with the same value: it only records, so that is harmless.
int on_option(int val, const char* optarg, int remote) noexcept {
  try {
    if (val < 0 || val >= static_cast<int>(safe::kSafeOptionCount)) return -1;
    auto id = static_cast<safe::SafeOption>(val);
    if (safe::Status parsed = safe::parse_option(g_state.given, id, optarg ? optarg : ""); !parsed) {
      slurm_error("%s", parsed.error().c_str());
      // On the job side the value was already accepted by the client; never fail a step for it.
      return remote ? 0 : -1;
    }
    g_state.seen[val] = true;
    return 0;
  } catch (...) {
    return -1;
  }
}

int register_options(spank_t sp) {
  for (const auto& spec : safe::option_specs()) {
    struct spank_option opt = {};
    opt.name = const_cast<char*>(spec.name);
    opt.arginfo = const_cast<char*>(spec.arginfo);
    opt.usage = const_cast<char*>(spec.usage);
    opt.has_arg = 1;
    opt.val = option_index(spec.id);
    opt.cb = on_option;
    if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) {
      slurm_error("safe: cannot register --%s", spec.name);
      return -1;
    }
  }
  return 0;
}

// Client side: options given only through SAFE_* variables become job SPANK options too.
int export_environment_options(spank_t sp) {
  for (const auto& spec : safe::option_specs()) {
    int index = option_index(spec.id);
    if (g_state.seen[index]) continue;  // the command line wins
    const char* value = std::getenv(spec.env);
    if (!value || !*value) continue;
    if (safe::Status parsed = safe::parse_option(g_state.given, spec.id, value); !parsed) {
      slurm_error("%s (from $%s)", parsed.error().c_str(), spec.env);
      return -1;
    }
    std::string text = g_state.given.value_text(spec.id);
    if (spank_job_control_setenv(sp, safe::spank_env_name(spec.id).c_str(), text.c_str(), 1) != ESPANK_SUCCESS) {
      slurm_error("safe: cannot pass $%s to the job", spec.env);
      return -1;
    }
  }
  return 0;
}

std::string job_env(spank_t sp, const std::string& name) {
  char buf[4096];
  if (spank_getenv(sp, name.c_str(), buf, sizeof buf) == ESPANK_SUCCESS) return buf;
  return "";
}

// The options the job was submitted with, in the client's order of precedence: those Slurm
// handed the callbacks (the command line), those the client put into the job's SPANK environment
// (exported to batch jobs with a SLURM_SPANK_ prefix), then the SAFE_* variables the job inherited
// (how srun and salloc jobs carry values given through the environment).
safe::SafeOptions submitted_options(spank_t sp) {
  safe::SafeOptions options = g_state.given;
  for (const auto& spec : safe::option_specs()) {
    if (g_state.seen[option_index(spec.id)]) continue;
    for (const std::string& source : {"SLURM_SPANK_" + safe::spank_env_name(spec.id), std::string(spec.env)}) {
      std::string value = job_env(sp, source);
      if (value.empty() || value == "(null)") continue;
      if (safe::Status parsed = safe::parse_option(options, spec.id, value); !parsed) {
        slurm_error("%s (from $%s)", parsed.error().c_str(), source.c_str());
        continue;
      }
      break;
    }
  }
  return options;
}

safe::SafeConfig load_config_or_defaults(bool& loaded) {
  std::string path = g_state.config_path.empty() ? safe::config_path_from_env() : g_state.config_path;
  safe::ConfigResult config = safe::load_config_file(path);
  loaded = config.ok();
  return loaded ? *config.config : safe::SafeConfig{};
}

// mkdir -p, as the job's user (slurmstepd runs task_init with the user's privileges), so every
// directory created belongs to the user.
bool make_directories(const std::string& path, std::string& error) {
  for (std::size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      error = "cannot create " + prefix + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    error = path + " exists and is not a directory";
    return false;
  }
  if (access(path.c_str(), W_OK) != 0) {
    error = path + " is not writable by the job's user";
    return false;
  }
  return true;
}

// Every earlier attempt of the job is superseded once this one runs: one whose fence safed did
// not write (Slurm requeued the job, or safed could not reach the directory) is fenced here, at
// the latest moment that is still before this attempt picks its checkpoint. Tasks on every node
// race to do it; the first fence stands (common/checkpoint_fence.hpp).
void fence_superseded_attempts(spank_t sp, const std::string& dir, const std::string& marker, uid_t uid,
                               int restart_count) {
  uint32_t job_id = 0;
  if (restart_count <= 0 || spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS || job_id == 0) return;
  // Beyond this many runs back, the attempts ended long ago.
  constexpr int kMaxFenced = 16;
  auto scan = safe::scan_checkpoints(dir, marker, uid);
  if (!scan) return;  // the resume scan says why
  std::string job = std::to_string(job_id);
  for (int attempt = std::max(1, restart_count + 1 - kMaxFenced); attempt <= restart_count; ++attempt) {
    if (scan->fences.count({job, attempt})) continue;
    auto fenced = safe::fence_attempt(dir, uid, {job, attempt}, *scan);
    if (!fenced)
      slurm_error("safe: cannot fence the checkpoints of attempt %d: %s; any it still writes are not excluded",
                  attempt, fenced.error().c_str());
  }
}

int export_job_environment(spank_t sp) {
  safe::SafeOptions options = submitted_options(sp);
  bool have_config = false;
  safe::SafeConfig config = load_config_or_defaults(have_config);
  // Without options and without a config, this is not a SaFE job: leave its environment alone.
  if (!options.any() && !have_config) return 0;

  uid_t uid = getuid();  // task_init runs with the job user's privileges
  spank_get_item(sp, S_JOB_UID, &uid);
  std::optional<safe::JobUser> user = safe::lookup_job_user(uid);
  safe::JobSettings settings =
      safe::job_settings_on_node(options, have_config ? &config : nullptr, user ? &*user : nullptr);

  // slurmstepd sets SLURM_RESTART_COUNT in the environment of each task, not earlier.
  int restart_count = std::atoi(job_env(sp, "SLURM_RESTART_COUNT").c_str());
  std::string resume_from;
  if (!settings.ckpt_dir.empty()) {
    std::string error;
    if (!make_directories(settings.ckpt_dir, error)) {
      slurm_error("safe: checkpoint directory: %s; fix --safe-ckpt-dir or its permissions", error.c_str());
      return -1;
    }
    fence_superseded_attempts(sp, settings.ckpt_dir, config.checkpoint.complete_marker, uid, restart_count);
    // Only the job's own checkpoints: a directory or checkpoint another user made (a shared,
    // pre-created path) could hold anything, and loading a checkpoint runs code.
    auto newest = safe::newest_complete_checkpoint(settings.ckpt_dir, config.checkpoint.complete_marker, uid);
    if (newest) resume_from = newest->path;
    else slurm_error("safe: not resuming: %s", newest.error().c_str());
  }
  // The job's node count now; its full count comes from the job_submit plugin (in the batch
  // environment of an elastic job), which the user's own script could change: it is advice only.
  int nodes = std::atoi(job_env(sp, "SLURM_JOB_NUM_NODES").c_str());
  int full_nodes = std::atoi(job_env(sp, "SAFE_FULL_NNODES").c_str());
  for (const auto& [name, value] : safe::safe_job_environment(settings, restart_count, resume_from, nodes, full_nodes))
    spank_setenv(sp, name.c_str(), value.c_str(), 1);
  return 0;
}

void read_plugin_arguments(int ac, char** av) {
  for (int i = 0; i < ac; ++i) {
    std::string arg = av[i];
    if (arg.rfind("config=", 0) == 0) g_state.config_path = arg.substr(7);
    else slurm_error("safe: unknown plugstack argument '%s' (known: config=PATH)", arg.c_str());
  }
}

}  // namespace

extern "C" {

int slurm_spank_init(spank_t sp, int ac, char** av) {
  int rc = -1;
  try {
    read_plugin_arguments(ac, av);
    switch (spank_context()) {
      case S_CTX_LOCAL:
      case S_CTX_ALLOCATOR:
      case S_CTX_REMOTE:
        rc = register_options(sp);
        break;
      default:
        rc = 0;
    }
  } catch (...) {
  }
  // A failed init in slurmstepd fails a batch step as a node fault: Slurm drains the node (every
  // release; 25.05's slurm_spank_init_failure_mode could change that, older ones cannot). The
  // job's tasks fail in task_init instead, which ends the job and leaves the node in service.
  if (rc != 0 && spank_context() == S_CTX_REMOTE) {
    g_state.remote_init_failed = true;
    return 0;
  }
  return rc;
}

int slurm_spank_init_post_opt(spank_t sp, int, char**) {
  try {
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) return export_environment_options(sp);
    return 0;
  } catch (...) {
    return -1;
  }
}

// In each task, as the job's user, once its environment is complete.
int slurm_spank_task_init(spank_t sp, int, char**) {
  try {
    if (g_state.remote_init_failed) {
      slurm_error("safe: the SaFE plugin failed to start on this node (its slurmd log says why); "
                  "the task cannot get its SAFE_* settings. Tell the cluster's admins");
      return -1;
    }
    return export_job_environment(sp);
  } catch (...) {
    slurm_error("safe: internal error while preparing the job environment");
    return -1;
  }
}

}  // extern "C"
