// Fencing the checkpoints of superseded attempts. A node cut off from the cluster keeps running
// its part of a job after SaFE (or Slurm) has requeued it, and goes on writing checkpoints into
// the shared checkpoint directory while the next attempt runs. None of those may ever be resumed
// from: they continue a run that no longer counts, and they interleave with the new attempt's.
//
// The rule (docs/user-guide.md, "Checkpoints of superseded attempts"):
//  - a trainer labels each checkpoint: its marker file holds "job=<SLURM_JOB_ID> attempt=<SAFE_ATTEMPT>";
//  - when an attempt is superseded, SaFE writes a fence for it into <ckpt_dir>/.safe-fence/: the
//    file job-<id>.attempt-<n>, which names the one checkpoint of that attempt that may still be
//    resumed from (its newest complete one at that moment; none when it had none);
//  - a checkpoint labelled with a fenced attempt counts only if it is the one its fence names.
// safed writes the fence before it requeues the job (or, when Slurm requeued it, before it lets
// the job start again); the next attempt's tasks write any fence still missing when they start.
// The first fence written for an attempt stands: later writers find it there and leave it.
// Unlabelled checkpoints cannot be told apart and are taken as before (unfenced).
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "common/result.hpp"

namespace safe {

struct CheckpointLabel {
  std::string job;  // Slurm's job id, as in SLURM_JOB_ID
  int attempt = 0;  // SAFE_ATTEMPT: 1 for the first run
  bool operator==(const CheckpointLabel& o) const { return job == o.job && attempt == o.attempt; }
};

// The label in a marker file's text: "job=<id> attempt=<n>" (the words in any order, anywhere in
// the text); nullopt when either is missing or malformed.
std::optional<CheckpointLabel> parse_checkpoint_label(std::string_view marker_text);
// What a trainer writes into the marker: "job=<id> attempt=<n>\n".
std::string checkpoint_label_text(const CheckpointLabel& label);

inline constexpr const char* kFenceDirName = ".safe-fence";
// "job-<id>.attempt-<n>", and back.
std::string fence_file_name(const CheckpointLabel& attempt);
std::optional<CheckpointLabel> parse_fence_file_name(std::string_view name);
// "checkpoint=<name>\n" (an empty name: nothing of the attempt counts), and back.
std::string fence_file_text(const std::string& checkpoint);
std::optional<std::string> parse_fence_file_text(std::string_view text);

// The fences of a directory: for each superseded attempt, the one checkpoint of it still usable.
using CheckpointFences = std::map<std::pair<std::string, int>, std::string>;

// Whether the checkpoint `name`, labelled `label`, is excluded by `fences`.
bool fenced_out(const std::optional<CheckpointLabel>& label, const std::string& name, const CheckpointFences& fences);

struct FenceOutcome {
  bool created = false;    // false: a fence for the attempt was there already
  std::string checkpoint;  // the checkpoint of the attempt still usable ("" none)
};

// Fences `attempt`'s checkpoints in `dir`: writes its fence, naming its newest complete checkpoint
// now, unless one is there. With `owner`, the directory must belong to that uid and the fence is
// written as that user (a privileged caller switches its thread's file-system ids for the writes).
Result<FenceOutcome> fence_attempt(const std::string& dir, const std::string& marker, std::optional<uid_t> owner,
                                   const CheckpointLabel& attempt);
// The same with a scan of `dir` the caller has just made (scan_checkpoints, common/checkpoint_scan.hpp),
// for a caller that fences several attempts at once: a fence written meanwhile still stands.
struct CheckpointScan;
Result<FenceOutcome> fence_attempt(const std::string& dir, std::optional<uid_t> owner, const CheckpointLabel& attempt,
                                   const CheckpointScan& scan);

}  // namespace safe
