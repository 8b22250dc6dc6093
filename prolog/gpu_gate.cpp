#include "prolog/gpu_gate.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace safe {

std::optional<std::vector<int>> parse_job_gpus(const std::string& text) {
  std::vector<int> gpus;
  std::istringstream in(text);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (part.empty()) continue;
    std::size_t dash = part.find('-');
    char* end = nullptr;
    long first = std::strtol(part.c_str(), &end, 10);
    if (end == part.c_str() || first < 0) return std::nullopt;
    long last = first;
    if (dash != std::string::npos) {
      std::string tail = part.substr(dash + 1);
      last = std::strtol(tail.c_str(), &end, 10);
      if (end == tail.c_str() || *end || last < first || last - first > 1024) return std::nullopt;
    } else if (*end) {
      return std::nullopt;
    }
    for (long i = first; i <= last; ++i) gpus.push_back(static_cast<int>(i));
  }
  return gpus;
}

HealthLevel job_health_level(const std::map<std::string, std::string>& env, const SafeConfig& config) {
  auto get = [&](const char* key) -> std::string {
    auto it = env.find(key);
    return it == env.end() ? "" : it->second;
  };
  std::string level = get(kSpankHealthVar);
  if (level == "strict") return HealthLevel::strict;
  if (level == "standard") return HealthLevel::standard;
  if (level == "off") return HealthLevel::off;
  if (const WorkspaceConfig* ws = config.find_workspace(get(kSpankWorkspaceVar))) return ws->default_health;
  return config.admission.default_health;
}

GateResult evaluate_gate(const GpuQuery& query, const HealthConfig& config, const std::vector<int>& gpus,
                         HealthLevel level) {
  GateResult gate;
  if (level == HealthLevel::off) return gate;
  GpuCheckScope scope;
  scope.only_gpus = gpus;
  gate.results = evaluate_gpu_checks(query, config, scope);
  for (const auto& r : gate.results) {
    if (r.status != CheckStatus::fail) continue;
    if (std::count(config.disabled_checks.begin(), config.disabled_checks.end(), r.check)) continue;
    if (r.severity == Severity::critical || level == HealthLevel::strict) gate.blocking.push_back(r);
  }
  gate.pass = gate.blocking.empty();
  for (const auto& r : gate.blocking) gate.drain = gate.drain || r.severity == Severity::critical;
  return gate;
}

}  // namespace safe
