// Lost work: what a failed attempt computed that a restart has to compute again. The job resumes
// from its newest complete checkpoint, so everything the attempt ran after that checkpoint (or
// all of it, when it wrote none) is recomputed by the next attempt and is not productive time.
// ETTR = (run time - lost work) / wall time since submission.
#pragma once

#include <algorithm>

namespace safe {

// Seconds of [attempt_start, attempt_end] after `newest_checkpoint` (unix seconds; 0 = none).
inline long long lost_work_s(long long attempt_start, long long attempt_end, long long newest_checkpoint) {
  long long run = std::max(0LL, attempt_end - attempt_start);
  long long kept = std::clamp(newest_checkpoint - attempt_start, 0LL, run);
  return run - kept;
}

// A workspace's (or a period's) productive and wall seconds, summed over its jobs, and their ETTR.
// No measurable wall time lost nothing: 1.
struct WorkspaceTime {
  double productive_s = 0, wall_s = 0;
  double ettr() const { return wall_s > 0 ? productive_s / wall_s : 1; }
};

}  // namespace safe
