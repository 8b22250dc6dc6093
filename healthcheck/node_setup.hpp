// What every node-side program (safe-healthcheck, safe-prolog, safe-epilog) works out first:
// the config, the node's Slurm name, and whether slurmd has just started.
#pragma once

#include <optional>
#include <string>

#include "common/config.hpp"
#include "common/node_fs.hpp"
#include "common/result.hpp"

namespace safe {

// slurmd gives HealthCheckProgram only SLURMD_NODENAME: no SLURM_CONF, no PATH. When run by
// slurmd (`slurmd_pid` > 0) and SLURM_CONF is unset, take it from slurmd's `-f FILE` argument, else
// its own environment, so scontrol talks to the cluster this slurmd belongs to; and give PATH a
// default. Call before starting threads (it sets environment variables).
void adopt_slurmd_environment(const NodeFs& proc_fs, int slurmd_pid);

// The config file of a node program: $SAFE_CONFIG; else safe.yaml beside the slurm.conf in use
// ($SLURM_CONF) when that file exists; else the default (/etc/safe/safe.yaml). `explicit_path` is
// set when the file was named (and so must exist).
std::string node_config_path(bool& explicit_path);

// PID of the slurmd that started this process (parent or grandparent), or 0.
int slurmd_pid(const NodeFs& proc_fs, int parent_pid);

// `path` as given (explicit) or from $SAFE_CONFIG / the default. The default file may be absent
// (all defaults then); an explicit one may not. nullopt and `error` on any config error.
Result<SafeConfig> load_node_config(const std::string& path, bool explicit_path);

// Node name: --node, then $SLURMD_NODENAME, then health.node_name, then the host name
// (its first label).
std::string resolve_node_name(const std::string& flag, const char* slurmd_nodename_env, const std::string& configured,
                              const std::string& hostname);
std::string host_name();

// "PID:STARTTIME" of the slurmd that started this process (our parent or grandparent), or "" when
// not run by slurmd. A value not seen before means slurmd has (re)started: the startup run.
std::string slurmd_instance(const NodeFs& fs, int parent_pid);

}  // namespace safe
