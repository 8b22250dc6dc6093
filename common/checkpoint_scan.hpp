// Finding the checkpoint a requeued job resumes from. A checkpoint is a directory directly inside
// the job's checkpoint directory; it is complete once it holds the marker file (COMPLETE by
// default), which a trainer writes last. The newest complete one is the one whose marker was
// written last (ties: the greater name). Torn checkpoints, without a marker, are never chosen.
#pragma once

#include <ctime>
#include <string>
#include <vector>

namespace safe {

struct CheckpointCandidate {
  std::string name;         // directory name inside the checkpoint directory
  bool complete = false;    // holds the marker as a regular file
  std::time_t marker_mtime = 0;
};

// Index into `candidates` of the newest complete checkpoint, or -1.
int pick_resume_checkpoint(const std::vector<CheckpointCandidate>& candidates);

// Scans `dir` (symlinks are not followed) and returns the absolute path of the newest complete
// checkpoint, or "" when there is none or `dir` cannot be read.
std::string newest_complete_checkpoint(const std::string& dir, const std::string& marker);

}  // namespace safe
