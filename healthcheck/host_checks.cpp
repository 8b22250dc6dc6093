#include "healthcheck/host_checks.hpp"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace safe {
namespace {

// /proc/mounts escapes blanks in paths as octal (\040).
std::string unescape_mount_path(const std::string& p) {
  std::string out;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] == '\\' && i + 3 < p.size() + 0 && std::isdigit(static_cast<unsigned char>(p[i + 1]))) {
      out += static_cast<char>(std::stoi(p.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += p[i];
    }
  }
  return out;
}

}  // namespace

CheckResult check_memory(const NodeFs& fs, int min_gib) {
  if (min_gib <= 0) return passed("memory", Severity::critical, false, "not checked");
  auto text = fs.read("/proc/meminfo");
  if (!text) return unknown("memory", Severity::critical, false, "cannot read /proc/meminfo");
  std::size_t pos = text->find("MemTotal:");
  if (pos == std::string::npos) return unknown("memory", Severity::critical, false, "no MemTotal in /proc/meminfo");
  long long kib = std::atoll(text->c_str() + pos + 9);
  long long gib = kib / (1024 * 1024);
  if (kib < static_cast<long long>(min_gib) * 1024 * 1024)
    return failed("memory", Severity::critical, false,
                  "memory " + std::to_string(gib) + " GiB < " + std::to_string(min_gib) + " GiB");
  return passed("memory", Severity::critical, false, std::to_string(gib) + " GiB");
}

CheckResult check_mounts(const NodeFs& fs, const std::vector<MountRequirement>& mounts) {
  if (mounts.empty()) return passed("mounts", Severity::critical, false, "none required");
  auto table = fs.read("/proc/mounts");
  if (!table) return unknown("mounts", Severity::critical, false, "cannot read /proc/mounts");
  std::map<std::string, std::string> options;  // mount point -> options (the last mount wins)
  std::istringstream in(*table);
  std::string device, point, type, opts;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    if (fields >> device >> point >> type >> opts) options[unescape_mount_path(point)] = opts;
  }
  std::vector<std::string> problems;
  for (const auto& m : mounts) {
    auto it = options.find(m.path);
    if (it == options.end()) {
      problems.push_back(m.path + " not mounted");
      continue;
    }
    if (("," + it->second + ",").find(",rw,") == std::string::npos) {
      problems.push_back(m.path + " mounted read-only");
      continue;
    }
    std::string here = fs.path(m.path);
    // A random name, created exclusively: a user who plants a file (or a link) under a name the
    // checker would use cannot make the mount look unwritable and drain the node.
    std::string probe = here + "/.safe-healthcheck.XXXXXX";
    int fd = mkostemp(probe.data(), O_CLOEXEC);
    if (fd < 0) {
      problems.push_back(m.path + " not writable: " + std::strerror(errno));
      continue;
    }
    close(fd);
    unlink(probe.c_str());
    struct statvfs st;
    if (statvfs(here.c_str(), &st) != 0) {
      problems.push_back(m.path + " statvfs: " + std::strerror(errno));
      continue;
    }
    double free_gib = static_cast<double>(st.f_bavail) * st.f_frsize / (1024.0 * 1024 * 1024);
    if (free_gib < m.min_free_gib) {
      problems.push_back(m.path + " free " + std::to_string(static_cast<long long>(free_gib)) + " GiB < " +
                         std::to_string(m.min_free_gib) + " GiB");
      continue;
    }
    if (st.f_files > 0) {
      double free_pct = 100.0 * static_cast<double>(st.f_favail) / static_cast<double>(st.f_files);
      if (free_pct < m.min_free_inodes_percent)
        problems.push_back(m.path + " free inodes " + std::to_string(static_cast<int>(free_pct)) + "% < " +
                           std::to_string(m.min_free_inodes_percent) + "%");
    }
  }
  if (!problems.empty()) return failed("mounts", Severity::critical, false, summarize_failures(problems));
  return passed("mounts", Severity::critical, false, std::to_string(mounts.size()) + " mounts ok");
}

CheckResult check_ib_ports(const NodeFs& fs, int min_rate_gbps) {
  if (min_rate_gbps <= 0) return passed("ib_ports", Severity::critical, false, "not checked");
  std::vector<std::string> problems;
  int ports = 0;
  for (const auto& dev : fs.list("/sys/class/infiniband")) {
    std::string base = "/sys/class/infiniband/" + dev + "/ports";
    for (const auto& port : fs.list(base)) {
      ++ports;
      std::string name = dev + "/" + port;
      auto state = fs.read_line(base + "/" + port + "/state");  // "4: ACTIVE"
      auto rate = fs.read_line(base + "/" + port + "/rate");    // "200 Gb/sec (4X HDR)"
      if (!state || state->find("ACTIVE") == std::string::npos) {
        std::string s = state ? state->substr(state->find(':') == std::string::npos ? 0 : state->find(':') + 2) : "unreadable";
        problems.push_back("IB " + name + " state " + s);
        continue;
      }
      double gbps = rate ? std::strtod(rate->c_str(), nullptr) : 0;
      if (gbps < min_rate_gbps)
        problems.push_back("IB " + name + " rate " + std::to_string(static_cast<int>(gbps)) + " < " +
                           std::to_string(min_rate_gbps) + " Gb/s");
    }
  }
  if (ports == 0) return failed("ib_ports", Severity::critical, false, "no InfiniBand/RDMA ports found");
  if (!problems.empty()) return failed("ib_ports", Severity::critical, false, summarize_failures(problems));
  return passed("ib_ports", Severity::critical, false, std::to_string(ports) + " ports ok");
}

Result<NumaMap> parse_numa_reference(const std::string& text) {
  NumaMap map;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    line = line.substr(0, line.find('#'));
    std::istringstream fields(line);
    std::string bus;
    int node = 0;
    if (!(fields >> bus)) continue;
    std::string extra;
    if (!(fields >> node) || (fields >> extra))
      return Error{"line " + std::to_string(number) + ": expects 'BUS_ID NUMA_NODE'"};
    map[bus] = node;
  }
  return map;
}

std::string format_numa_map(const NumaMap& map) {
  std::string out = "# GPU PCI bus id -> NUMA node (safe-healthcheck --print-numa-map)\n";
  for (const auto& [bus, node] : map) out += bus + " " + std::to_string(node) + "\n";
  return out;
}

CheckResult compare_numa(const NumaMap& reference, const NumaMap& actual) {
  std::vector<std::string> problems;
  for (const auto& [bus, node] : reference) {
    auto it = actual.find(bus);
    if (it == actual.end()) problems.push_back(bus + " missing (expected on NUMA " + std::to_string(node) + ")");
    else if (it->second != node)
      problems.push_back(bus + " on NUMA " + std::to_string(it->second) + ", expected " + std::to_string(node));
  }
  for (const auto& [bus, node] : actual)
    if (!reference.count(bus)) problems.push_back(bus + " (NUMA " + std::to_string(node) + ") not in the reference");
  if (!problems.empty()) return failed("numa_locality", Severity::critical, false, summarize_failures(problems));
  return passed("numa_locality", Severity::critical, false, std::to_string(reference.size()) + " GPUs as expected");
}

NumaMap numa_map_from_snapshot(const GpuSnapshot& snapshot) {
  NumaMap map;
  for (const auto& g : snapshot.gpus)
    if (!g.bus_id.empty()) map[g.bus_id] = g.numa_node;
  return map;
}

}  // namespace safe
