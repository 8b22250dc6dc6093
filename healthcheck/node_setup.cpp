#include "healthcheck/node_setup.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <sstream>

namespace safe {

std::optional<SafeConfig> load_node_config(const std::string& path, bool explicit_path, std::string& error) {
  struct stat st;
  if (!explicit_path && stat(path.c_str(), &st) != 0) return SafeConfig{};
  ConfigResult r = load_config_file(path);
  if (!r.ok()) {
    error = r.errors.front().to_string();
    if (r.errors.size() > 1) error += " (and " + std::to_string(r.errors.size() - 1) + " more; run safectl config check)";
    return std::nullopt;
  }
  return *r.config;
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

std::string slurmd_instance(const NodeFs& fs, int pid) {
  for (int depth = 0; depth < 2 && pid > 1; ++depth) {
    std::string base = "/proc/" + std::to_string(pid);
    auto stat = fs.read(base + "/stat");
    if (!stat) return {};
    // "PID (COMM) STATE PPID ... field 22 = starttime"; COMM may contain blanks, so parse after ')'.
    std::size_t open = stat->find('('), close = stat->rfind(')');
    if (open == std::string::npos || close == std::string::npos) return {};
    std::string comm = stat->substr(open + 1, close - open - 1);
    std::istringstream rest(stat->substr(close + 2));
    std::string field;
    std::vector<std::string> fields;
    while (rest >> field) fields.push_back(field);
    if (fields.size() < 20) return {};
    if (comm == "slurmd") return std::to_string(pid) + ":" + fields[19];  // field 22 overall
    pid = std::atoi(fields[1].c_str());  // ppid
  }
  return {};
}

}  // namespace safe
