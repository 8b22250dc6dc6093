// `safectl doctor`'s judgement: from what was found on this host and asked of Slurm, munge, safed
// and the bridge (DoctorFacts), one verdict per check, each failure with what to do. Pure, so that
// every verdict is table-tested; doctor.cpp gathers the facts.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config.hpp"
#include "common/result.hpp"
#include "common/slurm/node_status.hpp"

namespace safe::doctor {

// ok and skip pass; warn is shown but passes (a choice the site may have made on purpose); fail
// makes `safectl doctor` exit 1.
enum class Verdict { ok, warn, fail, skip };
const char* to_string(Verdict verdict);

struct Check {
  std::string name;    // config, munge, slurmctld, ...: stable, for --json readers
  Verdict verdict = Verdict::ok;
  std::string detail;  // what was found
  std::string fix;     // what to do; empty unless warn or fail
};

// A plugin file SaFE installs, as found on this host.
struct PluginFile {
  std::string path;
  bool present = false;
  std::string version;  // the Slurm release it was built for (its plugin_version)
  std::string error;    // why its version could not be read
  // Slurm loads a SPANK plugin of its own major.minor release; any other plugin only of its
  // exact release, micro included.
  bool spank = false;
};

// What safed's /api/v1/status said, asked with this host's munge credential.
struct SafedAnswer {
  std::string url;
  std::string error;  // empty when an HTTP answer came
  int http_status = 0;
  std::string role;  // active, standby, single
  std::string active_url;
  bool slurm_ok = false;
  std::string slurm_error;
  long long last_pass = 0;
  std::string config_sha256;
  std::string refusal;  // what safed said when it refused the request (its "error")
  std::optional<long long> date;  // its HTTP Date header, unix seconds
  long long asked_at = 0;         // this host's clock, halfway through the request
  double round_trip_s = 0;
};

struct BridgeAnswer {
  std::string url;
  bool named = false;  // given with --bridge: then it must answer
  std::string error;   // empty when an HTTP answer came
  int http_status = 0;
};

struct DoctorFacts {
  long long now = 0;
  // safe.yaml on this host
  std::string config_path;
  std::optional<SafeConfig> config;  // set when it is valid
  std::vector<std::string> config_errors;
  std::string config_sha256;
  // Slurm releases: SaFE's build, this host's commands, the plugin files in this host's PluginDir
  std::string built_for_slurm;
  std::string local_slurm;  // `sbatch --version`; empty when unknown
  std::vector<PluginFile> plugins;
  // slurmctld's configuration (`scontrol show config`); nullopt when it could not be read
  std::optional<std::map<std::string, std::string>> controller;
  std::string controller_error;
  // this host's sbatch: does Slurm here load spank_safe.so?
  std::string sbatch_help;
  std::string sbatch_error;
  std::string plugin_dirs;  // where the plugins were looked for
  // This host as a Slurm node (empty name: it is not one), and which of the programs slurmd runs
  // are executable here.
  std::string node_name;
  std::optional<NodeStatus> node;
  std::string node_error;
  std::map<std::string, bool> executable;
  // munge on this host
  bool munge_ok = false;
  std::string munge_error;
  SafedAnswer safed;
  BridgeAnswer bridge;
  int max_clock_skew_s = 5;
  // The nodes Slurm has in service (not down, responding), and the health checker's history
  // files as this host sees them: <health.state_dir>/<node>.json -> modification time. safed
  // reads the prolog's and epilog's evidence from the same directory on its own host.
  std::optional<std::vector<std::string>> nodes_in_service;
  std::string nodes_error;
  std::optional<std::map<std::string, long long>> health_files;
  std::string health_files_error;
};

std::vector<Check> diagnose(const DoctorFacts& facts);
bool any_failed(const std::vector<Check>& checks);

// `scontrol show config`'s "Key = Value" lines; the header and blank lines are skipped.
std::map<std::string, std::string> parse_scontrol_config(std::string_view text);
// Every program slurmctld has for `key`: Slurm 22.05 prints one "Prolog = a,b" line, later
// releases a line per program ("Prolog[0] = a", "Prolog[1] = b").
std::vector<std::string> programs_of(const std::map<std::string, std::string>& config, const std::string& key);
// "slurm 22.05.8" (sbatch --version) -> "22.05.8"; "" when it is not that.
std::string parse_slurm_version(std::string_view text);
// SLURM_VERSION_NUMBER as a plugin records it -> "22.05.8".
std::string slurm_version_string(unsigned long number);
// `find DIR -maxdepth 1 -name '*.json' -printf '%f %T@\n'` -> node name -> modification time.
std::map<std::string, long long> parse_health_files(std::string_view text);
// `sinfo -h -N -a -o '%N %T'` -> the nodes in service (not down, not responding, not powered down,
// not future), each once.
std::vector<std::string> parse_nodes_in_service(std::string_view text);
// A Slurm plugin's plugin_version, read from the ELF file's bytes (the symbol in .dynsym, its value
// in the section that holds it), without loading it: safectl runs as root, and a plugin linked
// with BIND_NOW (Debian's hardening) would not even load outside Slurm.
Result<unsigned long> plugin_version_in_elf(std::string_view file);

}  // namespace safe::doctor
