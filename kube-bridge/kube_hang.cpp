#include "kube-bridge/kube_hang.hpp"

#include <algorithm>

namespace safe::bridge {

std::optional<JobFailure> kube_hang_failure(const std::vector<PodProgress>& pods, std::time_t now, int hang_timeout) {
  if (hang_timeout <= 0 || pods.empty()) return std::nullopt;
  // One pod writing is progress for all: as on Slurm, where every task writes to one output file.
  std::time_t latest = std::max_element(pods.begin(), pods.end(), [](const auto& a, const auto& b) {
                         return a.last_output < b.last_output;
                       })->last_output;
  if (now - latest < hang_timeout) return std::nullopt;
  std::vector<PodProgress> sorted = pods;
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.pod < b.pod; });
  std::string silent;
  for (const auto& p : sorted)
    silent += (silent.empty() ? "" : ", ") + p.pod + " " + std::to_string(now - p.last_output) + " s";
  JobFailure f;
  f.end = JobEnd::hung;
  f.hang_detail = "no pod log output for " + std::to_string(now - latest) + " s (hangTimeout=" +
                  std::to_string(hang_timeout) + "; silent: " + silent + ")";
  return f;
}

int hang_poll_seconds(int hang_timeout) {
  if (hang_timeout <= 0) return 0;
  return std::clamp(hang_timeout / 4, 1, 30);
}

}  // namespace safe::bridge
