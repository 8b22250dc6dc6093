#include "common/job_metadata.hpp"

#include <charconv>

#include "common/signal_name.hpp"

namespace safe {
namespace {

std::optional<int> to_int(std::string_view s) {
  int v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string format_job_metadata(const JobMetadata& m) {
  const JobSettings& s = m.settings;
  std::string out(kMetadataPrefix);
  if (!s.workspace.empty()) out += " ws=" + s.workspace;
  out += " retries=" + std::to_string(m.retries_used) + "/" + std::to_string(s.retries);
  out += " health=" + std::string(to_string(s.health));
  out += " sig=" + s.ckpt_signal.to_string();
  out += " hang=" + std::to_string(s.hang_timeout);
  out += " gpus=" + std::to_string(s.gpus);
  if (m.submitted > 0) out += " sub=" + std::to_string(m.submitted);
  // An elastic job: full node count / fewest / step (--safe-min-nodes, --safe-node-multiple).
  if (s.min_nodes > 0)
    out += " elastic=" + std::to_string(s.full_nodes) + "/" + std::to_string(s.min_nodes) + "/" +
           std::to_string(s.node_multiple);
  if (!s.ckpt_dir.empty()) out += " ckpt=" + s.ckpt_dir;
  if (!m.last_failure.empty()) out += " last=" + m.last_failure;
  return out;
}

std::optional<JobMetadata> parse_job_metadata(std::string_view text) {
  auto at = text.find(kMetadataPrefix);
  if (at == std::string_view::npos) return std::nullopt;
  text.remove_prefix(at + kMetadataPrefix.size());
  JobMetadata m;
  bool saw_retries = false;
  while (!text.empty()) {
    while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
    if (text.empty()) break;
    if (text.starts_with("last=")) {
      m.last_failure = std::string(text.substr(5));
      break;
    }
    std::string_view word = text.substr(0, text.find(' '));
    text.remove_prefix(word.size());
    auto eq = word.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = word.substr(0, eq), value = word.substr(eq + 1);
    if (key == "ws") {
      m.settings.workspace = value;
    } else if (key == "retries") {
      auto slash = value.find('/');
      if (slash == std::string_view::npos) return std::nullopt;
      auto used = to_int(value.substr(0, slash)), max = to_int(value.substr(slash + 1));
      if (!used || !max) return std::nullopt;
      m.retries_used = *used;
      m.settings.retries = *max;
      saw_retries = true;
    } else if (key == "health") {
      if (value == "strict") m.settings.health = HealthLevel::strict;
      else if (value == "off") m.settings.health = HealthLevel::off;
      else m.settings.health = HealthLevel::standard;
    } else if (key == "sig") {
      SafeOptions scratch;
      if (parse_option(scratch, SafeOption::ckpt_signal, value)) m.settings.ckpt_signal = *scratch.ckpt_signal;
    } else if (key == "hang") {
      m.settings.hang_timeout = to_int(value).value_or(0);
    } else if (key == "gpus") {
      m.settings.gpus = to_int(value).value_or(0);
    } else if (key == "sub") {
      long long v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec == std::errc() && end == value.data() + value.size() && v > 0) m.submitted = v;
    } else if (key == "elastic") {
      auto a = value.find('/'), b = value.rfind('/');
      if (a == std::string_view::npos || a == b) continue;
      auto full = to_int(value.substr(0, a)), min = to_int(value.substr(a + 1, b - a - 1)),
           step = to_int(value.substr(b + 1));
      if (!full || !min || !step || *min < 1 || *step < 1 || *full < *min) continue;
      m.settings.full_nodes = *full;
      m.settings.min_nodes = *min;
      m.settings.node_multiple = *step;
    } else if (key == "ckpt") {
      m.settings.ckpt_dir = value;
    }
  }
  if (!saw_retries) return std::nullopt;
  return m;
}

std::string merge_admin_comment(std::string_view existing, std::string_view record) {
  auto at = existing.find(kMetadataPrefix);
  std::string_view admin_text = at == std::string_view::npos ? existing : existing.substr(0, at);
  while (!admin_text.empty() && (admin_text.back() == ' ' || admin_text.back() == ';')) admin_text.remove_suffix(1);
  if (admin_text.empty()) return std::string(record);
  return std::string(admin_text) + "; " + std::string(record);
}

}  // namespace safe
