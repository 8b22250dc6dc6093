#include "common/config.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <tuple>

#include "common/config_schema.hpp"
#include "common/yaml_document.hpp"

namespace safe {

std::string_view to_string(HealthLevel level) {
  switch (level) {
    case HealthLevel::strict: return "strict";
    case HealthLevel::standard: return "standard";
    case HealthLevel::off: return "off";
  }
  return "standard";
}

std::string_view to_string(GpuBackendKind kind) {
  switch (kind) {
    case GpuBackendKind::auto_detect: return "auto";
    case GpuBackendKind::rsmi: return "rsmi";
    case GpuBackendKind::nvml: return "nvml";
    case GpuBackendKind::sim: return "sim";
  }
  return "auto";
}

const WorkspaceConfig* SafeConfig::find_workspace(std::string_view name) const {
  for (const auto& w : workspaces)
    if (w.name == name) return &w;
  return nullptr;
}

std::string ConfigError::to_string() const {
  if (line == 0) return file + ": " + message;
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

ConfigResult parse_config(std::string_view text, const std::string& file) {
  ConfigResult result;
  result.text = std::string(text);
  if (text.find('\0') != std::string_view::npos) {
    result.errors.push_back({file, 0, 0, "contains a NUL byte: not a text file"});
    return result;
  }
  yaml::ParseResult doc = yaml::parse(text);
  for (const auto& e : doc.errors) result.errors.push_back({file, e.mark.line, e.mark.column, e.message});
  if (!doc.root) return result;

  SafeConfig config;
  read_config_document(*doc.root, config, result.errors, file, nullptr);
  // Schema order is not file order; admins fix files top to bottom.
  std::stable_sort(result.errors.begin(), result.errors.end(), [](const ConfigError& a, const ConfigError& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  if (result.errors.empty()) result.config = std::move(config);
  return result;
}

namespace {
// safe.yaml is a few KiB; a file far larger is a mistake, not a config.
constexpr long long kMaxConfigBytes = 16LL << 20;
}  // namespace

ConfigResult load_config_file(const std::string& path) {
  auto unreadable = [&](const std::string& why) {
    ConfigResult result;
    result.errors.push_back({path, 0, 0, why});
    return result;
  };
  // O_NONBLOCK and a regular-file check: a FIFO or device named as the config (SAFE_CONFIG is
  // anyone's to set) must get an error, not block the reader.
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return unreadable(std::string("cannot read: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return unreadable("cannot read: not a regular file");
  }
  if (st.st_size > kMaxConfigBytes) {
    close(fd);
    return unreadable("cannot read: larger than " + std::to_string(kMaxConfigBytes >> 20) + " MiB");
  }
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  int read_error = 0;
  while (got < text.size()) {
    ssize_t n = read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_error = errno;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  close(fd);
  if (read_error != 0) return unreadable(std::string("cannot read: ") + std::strerror(read_error));
  text.resize(got);  // the file shrank meanwhile: what was there
  return parse_config(text, path);
}

std::string config_path_from_env() {
  const char* env = std::getenv("SAFE_CONFIG");
  if (env && *env) return env;
  return SAFE_DEFAULT_CONFIG_PATH;
}

std::vector<std::string> config_key_paths() {
  std::vector<std::string> paths;
  std::vector<ConfigError> ignored;
  yaml::Node empty;
  empty.kind = yaml::Node::Kind::mapping;
  SafeConfig scratch;
  read_config_document(empty, scratch, ignored, "<schema>", &paths);
  std::set<std::string> unique(paths.begin(), paths.end());
  // Sections are keys too, but documentation is checked leaf by leaf.
  std::vector<std::string> leaves;
  for (const auto& p : unique) {
    bool is_prefix = false;
    for (const auto& q : unique)
      if (q.size() > p.size() && q.compare(0, p.size(), p) == 0 && (q[p.size()] == '.' || q[p.size()] == '['))
        is_prefix = true;
    if (!is_prefix) leaves.push_back(p);
  }
  return leaves;
}

}  // namespace safe
