#include "common/hostlist.hpp"

#include <algorithm>
#include <charconv>
#include <unordered_set>

namespace safe {
namespace {

void expand_one(std::string_view item, std::vector<std::string>& out) {
  auto open = item.find('[');
  if (open == std::string_view::npos) {
    if (!item.empty()) out.emplace_back(item);
    return;
  }
  auto close = item.find(']', open);
  if (close == std::string_view::npos) return;
  std::string_view prefix = item.substr(0, open), body = item.substr(open + 1, close - open - 1),
                   suffix = item.substr(close + 1);
  while (!body.empty()) {
    std::string_view part = body.substr(0, body.find(','));
    body.remove_prefix(std::min(body.size(), part.size() + 1));
    auto dash = part.find('-');
    std::string_view lo = part.substr(0, dash), hi = dash == std::string_view::npos ? lo : part.substr(dash + 1);
    long a = 0, b = 0;
    if (std::from_chars(lo.data(), lo.data() + lo.size(), a).ec != std::errc() ||
        std::from_chars(hi.data(), hi.data() + hi.size(), b).ec != std::errc() || b < a || b - a > 100000)
      continue;
    for (long i = a; i <= b; ++i) {
      std::string num = std::to_string(i);
      if (num.size() < lo.size()) num.insert(0, lo.size() - num.size(), '0');
      std::vector<std::string> rest;
      expand_one(suffix, rest);  // a second bracket group ("r[1-2]n[1-2]")
      if (rest.empty()) out.push_back(std::string(prefix) + num);
      for (auto& r : rest) out.push_back(std::string(prefix) + num + r);
    }
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (i == list.size() || (list[i] == ',' && depth == 0)) {
      expand_one(list.substr(start, i - start), out);
      start = i + 1;
    }
  }
  return out;
}

std::string join_hostlist(const std::vector<std::string>& names) {
  std::string out;
  std::unordered_set<std::string_view> seen;  // a job's 2,048 nodes: a linear search was quadratic
  for (const auto& n : names) {
    if (n.empty() || !seen.insert(n).second) continue;
    if (!out.empty()) out += ",";
    out += n;
  }
  return out;
}

}  // namespace safe
