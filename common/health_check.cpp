#include "common/health_check.hpp"

namespace safe {

std::string_view to_string(Severity severity) { return severity == Severity::critical ? "critical" : "warning"; }

std::string_view to_string(CheckStatus status) {
  switch (status) {
    case CheckStatus::pass: return "pass";
    case CheckStatus::fail: return "fail";
    case CheckStatus::unknown: return "unknown";
  }
  return "?";
}

CheckResult passed(std::string check, Severity severity, bool urgent, std::string detail) {
  return {std::move(check), CheckStatus::pass, severity, urgent, std::move(detail)};
}
CheckResult failed(std::string check, Severity severity, bool urgent, std::string detail) {
  return {std::move(check), CheckStatus::fail, severity, urgent, std::move(detail)};
}
CheckResult unknown(std::string check, Severity severity, bool urgent, std::string detail) {
  return {std::move(check), CheckStatus::unknown, severity, urgent, std::move(detail)};
}

bool is_health_check_name(std::string_view name) {
  for (const char* known : kHealthCheckNames)
    if (name == known) return true;
  return false;
}

std::string summarize_failures(const std::vector<std::string>& details) {
  if (details.empty()) return {};
  std::string s = details.front();
  if (details.size() > 1) s += " (+" + std::to_string(details.size() - 1) + " more)";
  return s;
}

}  // namespace safe
