#include "common/lemon_detection.hpp"

#include <algorithm>

namespace safe {

bool is_lemon(const std::vector<long long>& fault_times, long long now, int faults, int window_s) {
  auto recent = std::count_if(fault_times.begin(), fault_times.end(),
                              [&](long long t) { return t > now - window_s && t <= now; });
  return recent >= faults;
}

std::string quarantine_reason(const std::string& node, int faults, int window_s, const std::string& last_fault) {
  std::string last = last_fault;
  if (last.rfind(kSafeDrainPrefix, 0) == 0) last = last.substr(kSafeDrainPrefix.size());
  while (!last.empty() && last.front() == ' ') last.erase(0, 1);
  std::string reason = std::string(kQuarantinePrefix) + " " + std::to_string(faults) + " faults in " +
                       std::to_string(window_s) + "s (last: " + last + "); repair, then: safectl node release " + node;
  if (reason.size() > 250) reason.resize(250);
  return reason;
}

}  // namespace safe
