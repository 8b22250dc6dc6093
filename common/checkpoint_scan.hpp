// Finding the checkpoint a requeued job resumes from. A checkpoint is a directory directly inside
// the job's checkpoint directory; it is complete once it holds the marker file (COMPLETE by
// default), which a trainer writes last. The newest complete one is the one whose marker was
// written last (ties: the greater name). Torn checkpoints, without a marker, are never chosen,
// and neither is anything the job's user does not own: a checkpoint is code (pickles), so one
// planted by another user in a shared directory must never be loaded. Checkpoints of superseded
// attempts are fenced (common/checkpoint_fence.hpp): one its attempt's fence excludes is never chosen.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include "common/checkpoint_fence.hpp"
#include "common/result.hpp"

namespace safe {

struct CheckpointCandidate {
  std::string name;         // directory name inside the checkpoint directory
  bool complete = false;    // holds the marker as a regular file
  std::time_t marker_mtime = 0;
  long long marker_mtime_ns = 0;         // the same, to the nanosecond
  std::optional<CheckpointLabel> label;  // what the marker says wrote it
};

// Index into `candidates` of the newest complete checkpoint that `fences` do not exclude, or -1.
int pick_resume_checkpoint(const std::vector<CheckpointCandidate>& candidates, const CheckpointFences& fences = {});

// A scan stops with an error past this many entries (a directory with millions of entries must
// not hold a job step or safed for minutes).
constexpr std::size_t kMaxCheckpointEntries = 100000;

struct NewestCheckpoint {
  std::string path;        // absolute path; "" when there is none
  std::time_t marker_mtime = 0;
  long long marker_mtime_ns = 0;  // the same, to the nanosecond
};

struct CheckpointScan {
  std::vector<CheckpointCandidate> candidates;
  CheckpointFences fences;
};

// Scans `dir` without following links: its checkpoints (with their markers' labels) and its
// fences. With `owner`, the directory, the checkpoint and its marker (and a fence) must all belong
// to that uid: others' entries are skipped, and a directory that is not the owner's is an error
// (SaFE resumes from nothing in it).
Result<CheckpointScan> scan_checkpoints(const std::string& dir, const std::string& marker, std::optional<uid_t> owner,
                                        std::size_t max_entries = kMaxCheckpointEntries);

// The scan's choice (pick_resume_checkpoint).
Result<NewestCheckpoint> newest_complete_checkpoint(const std::string& dir, const std::string& marker,
                                                    std::optional<uid_t> owner,
                                                    std::size_t max_entries = kMaxCheckpointEntries);

}  // namespace safe
