#include "healthcheck/kmsg_check.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace safe {
namespace {

bool contains(std::string_view haystack, std::string_view needle) { return haystack.find(needle) != std::string_view::npos; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// "NVRM: Xid (PCI:0000:c1:00): 79, pid=..." -> 79
std::optional<int> nvidia_xid(std::string_view m) {
  std::size_t pos = m.find("NVRM: Xid (");
  if (pos == std::string_view::npos) return std::nullopt;
  pos = m.find("): ", pos);
  if (pos == std::string_view::npos) return std::nullopt;
  std::string rest(m.substr(pos + 3, 12));
  char* end = nullptr;
  long xid = std::strtol(rest.c_str(), &end, 10);
  if (end == rest.c_str()) return std::nullopt;
  return static_cast<int>(xid);
}

// A critical AMD/host pattern in one message, described for the report; nullopt when none.
std::optional<std::string> critical_pattern(std::string_view m) {
  std::string l = lower(m);
  if (contains(l, "amdgpu") && contains(l, "uncorrectable")) return "amdgpu uncorrectable RAS error";
  if (contains(l, "amdgpu") && contains(l, "gpu reset")) return "amdgpu GPU reset";
  if (contains(l, "xgmi") && contains(l, "link") && contains(l, "error")) return "XGMI link error";
  if (contains(l, "machine check events logged") || contains(l, "mce: [hardware error]")) return "machine check (MCE)";
  return std::nullopt;
}

std::optional<std::string> warning_pattern(std::string_view m) {
  std::string l = lower(m);
  if (contains(l, "amdgpu") && contains(l, "correctable") && !contains(l, "uncorrectable"))
    return "amdgpu correctable RAS error";
  return std::nullopt;
}

}  // namespace

std::vector<KmsgRecord> parse_kmsg(std::string_view text) {
  std::vector<KmsgRecord> records;
  while (!text.empty()) {
    std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line[0] == ' ') continue;  // continuation (" KEY=value") lines
    std::size_t semi = line.find(';');
    if (semi == std::string_view::npos) continue;
    std::string_view prefix = line.substr(0, semi);
    std::size_t c1 = prefix.find(',');
    std::size_t c2 = c1 == std::string_view::npos ? c1 : prefix.find(',', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::size_t c3 = prefix.find(',', c2 + 1);
    std::string usec(prefix.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1));
    char* end = nullptr;
    unsigned long long value = std::strtoull(usec.c_str(), &end, 10);
    if (end == usec.c_str()) continue;
    records.push_back({value, std::string(line.substr(semi + 1))});
  }
  return records;
}

Result<std::vector<KmsgRecord>> read_kmsg(const NodeFs& fs) {
  int fd = open(fs.path("/dev/kmsg").c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Error{fs.path("/dev/kmsg") + ": " + std::strerror(errno)};
  std::string text;
  char buf[16384];  // larger than a kmsg record: the device returns one record per read
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      text.append(buf, static_cast<std::size_t>(n));
      if (text.back() != '\n') text += '\n';
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) continue;  // records were overwritten while reading: go on
    if (n < 0 && errno != EAGAIN) {
      std::string error = fs.path("/dev/kmsg") + ": " + std::strerror(errno);
      close(fd);
      return Error{error};
    }
    break;  // EAGAIN (device: no more records) or 0 (plain file: end)
  }
  close(fd);
  return parse_kmsg(text);
}

double read_uptime_s(const NodeFs& fs) {
  auto text = fs.read("/proc/uptime");
  if (!text) return -1;
  return std::strtod(text->c_str(), nullptr);
}

std::vector<CheckResult> evaluate_kmsg(const std::vector<KmsgRecord>& records, std::uint64_t now_usec,
                                       const HealthThresholds& t) {
  auto window_start = [&](int seconds) -> std::uint64_t {
    std::uint64_t w = static_cast<std::uint64_t>(seconds) * 1000000ULL;
    return now_usec > w ? now_usec - w : 0;
  };
  std::uint64_t since = window_start(t.kmsg_window_s);
  std::uint64_t storm_since = window_start(t.pcie_bus_error_storm_window_s);
  std::vector<std::string> critical, warning;
  long long bus_errors = 0;
  for (const auto& r : records) {
    if (r.usec < since || r.usec > now_usec) continue;
    if (auto xid = nvidia_xid(r.message)) {
      if (std::count(t.xid_critical.begin(), t.xid_critical.end(), *xid)) critical.push_back("NVIDIA XID " + std::to_string(*xid));
      else if (std::count(t.xid_warning.begin(), t.xid_warning.end(), *xid)) warning.push_back("NVIDIA XID " + std::to_string(*xid));
      continue;
    }
    if (r.usec >= storm_since && contains(r.message, "PCIe Bus Error")) ++bus_errors;
    if (auto what = critical_pattern(r.message)) critical.push_back(*what);
    else if (auto what2 = warning_pattern(r.message)) warning.push_back(*what2);
  }
  if (bus_errors > t.pcie_bus_error_storm_count)
    critical.push_back("PCIe bus error storm: " + std::to_string(bus_errors) + " in " +
                       std::to_string(t.pcie_bus_error_storm_window_s) + " s");
  auto describe = [](std::vector<std::string> found) {
    // The latest match is the most telling; count the rest.
    std::reverse(found.begin(), found.end());
    return "kernel log: " + summarize_failures(found);
  };
  std::vector<CheckResult> results;
  results.push_back(critical.empty() ? passed("kmsg_critical", Severity::critical, true)
                                     : failed("kmsg_critical", Severity::critical, true, describe(critical)));
  results.push_back(warning.empty() ? passed("kmsg_warning", Severity::warning, false)
                                    : failed("kmsg_warning", Severity::warning, false, describe(warning)));
  return results;
}

std::vector<CheckResult> run_kmsg_check(const NodeFs& fs, const HealthThresholds& t) {
  auto records = read_kmsg(fs);
  double uptime = read_uptime_s(fs);
  if (!records || uptime < 0) {
    std::string error = records ? "cannot read /proc/uptime" : records.error();
    return {unknown("kmsg_critical", Severity::critical, true, error),
            unknown("kmsg_warning", Severity::warning, false, error)};
  }
  return evaluate_kmsg(*records, static_cast<std::uint64_t>(uptime * 1e6), t);
}

}  // namespace safe
