#include "healthcheck/node_setup.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <vector>

namespace safe {

Result<SafeConfig> load_node_config(const std::string& path, bool explicit_path) {
  struct stat st;
  if (!explicit_path && stat(path.c_str(), &st) != 0) return SafeConfig{};
  ConfigResult r = load_config_file(path);
  if (!r.ok()) {
    std::string error = r.errors.front().to_string();
    if (r.errors.size() > 1) error += " (and " + std::to_string(r.errors.size() - 1) + " more; run safectl config check)";
    return Error{error};
  }
  return *r.config;
}

namespace {

// NUL-separated /proc/PID/{environ,cmdline} as a list.
std::vector<std::string> nul_list(const NodeFs& fs, const std::string& path) {
  std::vector<std::string> items;
  auto text = fs.read(path);
  if (!text) return items;
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\0', start);
    if (end == std::string::npos) end = text->size();
    items.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return items;
}

struct ProcStat {
  std::string comm;
  int ppid = 0;
  std::string starttime;
};

std::optional<ProcStat> proc_stat(const NodeFs& fs, int pid) {
  auto stat = fs.read("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return std::nullopt;
  // "PID (COMM) STATE PPID ... field 22 = starttime"; COMM may contain blanks, so parse after ')'.
  std::size_t open = stat->find('('), close = stat->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 > stat->size()) return std::nullopt;
  std::istringstream rest(stat->substr(close + 2));
  std::vector<std::string> fields;
  std::string field;
  while (rest >> field) fields.push_back(field);
  if (fields.size() < 20) return std::nullopt;
  return ProcStat{stat->substr(open + 1, close - open - 1), std::atoi(fields[1].c_str()), fields[19]};
}

}  // namespace

int slurmd_pid(const NodeFs& fs, int pid) {
  for (int depth = 0; depth < 2 && pid > 1; ++depth) {
    auto st = proc_stat(fs, pid);
    if (!st) return 0;
    if (st->comm == "slurmd") return pid;
    pid = st->ppid;
  }
  return 0;
}

void adopt_slurmd_environment(const NodeFs& fs, int pid) {
  if (!std::getenv("PATH")) setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 1);
  if (pid <= 0 || std::getenv("SLURM_CONF")) return;
  // slurmd's `-f FILE` first: slurmd reads that file whatever SLURM_CONF it inherited, and a
  // SLURM_CONF left in its environment may name another cluster's.
  std::string base = "/proc/" + std::to_string(pid);
  auto args = nul_list(fs, base + "/cmdline");
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string file;
    if (args[i] == "-f" && i + 1 < args.size()) file = args[i + 1];
    else if (args[i].rfind("-f", 0) == 0 && args[i].size() > 2) file = args[i].substr(2);
    if (!file.empty() && file[0] == '/') {
      setenv("SLURM_CONF", file.c_str(), 1);
      return;
    }
  }
  for (const auto& entry : nul_list(fs, base + "/environ")) {
    if (entry.rfind("SLURM_CONF=", 0) == 0 && entry.size() > 11) {
      setenv("SLURM_CONF", entry.c_str() + 11, 1);
      return;
    }
  }
}

std::string node_config_path(bool& explicit_path) {
  explicit_path = false;
  if (const char* env = std::getenv("SAFE_CONFIG"); env && *env) {
    explicit_path = true;
    return env;
  }
  if (const char* slurm_conf = std::getenv("SLURM_CONF"); slurm_conf && *slurm_conf) {
    std::string dir(slurm_conf);
    dir = dir.substr(0, dir.find_last_of('/'));
    std::string beside = (dir.empty() ? "" : dir) + "/safe.yaml";
    struct stat st;
    if (stat(beside.c_str(), &st) == 0) return beside;
  }
  return config_path_from_env();
}

std::string resolve_node_name(const std::string& flag, const char* env, const std::string& configured,
                              const std::string& hostname) {
  if (!flag.empty()) return flag;
  if (env && *env) return env;
  if (!configured.empty()) return configured;
  return hostname.substr(0, hostname.find('.'));
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

std::string slurmd_instance(const NodeFs& fs, int parent_pid) {
  int pid = slurmd_pid(fs, parent_pid);
  if (pid <= 0) return {};
  auto st = proc_stat(fs, pid);
  return st ? std::to_string(pid) + ":" + st->starttime : std::string();
}

}  // namespace safe
