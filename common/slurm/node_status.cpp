#include "common/slurm/node_status.hpp"

#include "common/slurm/model.hpp"

namespace safe {
namespace {

// Value of `key=` in a one-line record whose values have no spaces.
std::string field(std::string_view line, std::string_view key) {
  std::string k = std::string(key) + "=";
  std::size_t pos = 0;
  if (line.substr(0, k.size()) != k) {
    pos = line.find(" " + k);
    if (pos == std::string_view::npos) return {};
    ++pos;
  }
  std::size_t start = pos + k.size();
  std::size_t end = line.find_first_of(" \n", start);
  return std::string(line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

bool NodeStatus::has_flag(std::string_view flag) const {
  std::string_view s = state;
  while (!s.empty()) {
    std::size_t plus = s.find('+');
    std::string_view part = s.substr(0, plus);
    while (!part.empty() && (part.back() == '*' || part.back() == '~' || part.back() == '#' || part.back() == '!' ||
                             part.back() == '%' || part.back() == '$' || part.back() == '@' || part.back() == '^' ||
                             part.back() == '-'))
      part.remove_suffix(1);
    if (part == flag) return true;
    if (plus == std::string_view::npos) break;
    s.remove_prefix(plus + 1);
  }
  return false;
}

bool NodeStatus::drained() const { return has_flag("DRAIN") || has_flag("DRAINED") || has_flag("DRAINING"); }

bool NodeStatus::idle() const { return has_flag("IDLE") && !has_flag("COMPLETING"); }

std::optional<NodeStatus> parse_scontrol_show_node(std::string_view output) {
  std::size_t start = output.find("NodeName=");
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view line = output.substr(start);
  line = line.substr(0, line.find('\n'));
  NodeStatus node;
  node.name = field(line, "NodeName");
  node.state = field(line, "State");
  node.version = field(line, "Version");
  if (node.version == "(null)") node.version.clear();
  if (node.name.empty() || node.state.empty()) return std::nullopt;
  // Reason may contain spaces; Slurm ends it with " [user@time]" and prints it last on the line.
  // A stale reason (model.hpp, reason_counts) on a node in service is dropped.
  std::size_t r = line.find(" Reason=");
  bool counts = reason_counts(node.drained(), node.has_flag("DOWN"), node.has_flag("FAIL") || node.has_flag("FAILING"));
  if (r != std::string_view::npos && counts) {
    std::string_view reason = line.substr(r + 8);
    std::size_t bracket = reason.rfind(" [");
    if (bracket != std::string_view::npos && reason.find('@', bracket) != std::string_view::npos &&
        reason.find(']', bracket) != std::string_view::npos)
      reason = reason.substr(0, bracket);
    while (!reason.empty() && (reason.back() == ' ' || reason.back() == '\r')) reason.remove_suffix(1);
    node.reason = std::string(reason);
  }
  return node;
}

bool is_own_reason(std::string_view reason) { return starts_with(reason, kOwnReasonPrefix); }
bool is_quarantine_reason(std::string_view reason) { return starts_with(reason, kQuarantineReasonPrefix); }

std::string own_reason(std::string_view detail) {
  std::string reason = std::string(kOwnReasonPrefix) + " ";
  for (char c : detail) reason += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  if (reason.size() > kMaxReasonLength) reason = reason.substr(0, kMaxReasonLength - 3) + "...";
  return reason;
}

}  // namespace safe
