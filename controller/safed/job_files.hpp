// What safed reads from file systems about a job: progress (output size, heartbeat), the newest
// complete checkpoint, the job's own last words (its output's tail), and the prolog's and epilog's
// evidence. Users control most of these files and shared file systems hang, so the planner never
// waits for a read: each call answers with what is known now and, when that is older than
// `since` (unix seconds), asks for a fresh read. The real implementation (AsyncJobFiles) reads on
// DeadlineReader's workers; the planner's tests use a fake that answers at once.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/evidence_files.hpp"
#include "common/failure_classification.hpp"
#include "controller/safed/deadline_reader.hpp"

namespace safe {

template <class T>
struct Observed {
  enum class State { pending, known, unknown };
  State state = State::pending;  // pending: no answer fresh enough yet, ask again next pass
  T value{};                     // when known
  std::string why;               // when unknown: what stopped the read (missing, another's, timed out)

  static Observed known(T v) { return {State::known, std::move(v), ""}; }
  static Observed unknown(std::string why) { return {State::unknown, T{}, std::move(why)}; }
  bool is_pending() const { return state == State::pending; }
  bool is_known() const { return state == State::known; }
};

struct FileProgress {
  long long size = 0;
  long long mtime = 0;
};

class JobFiles {
 public:
  virtual ~JobFiles() = default;
  // Size and mtime of a job's output or heartbeat file, a regular file that `owner` owns; unknown
  // when it is missing, not a regular file (/dev/null, a FIFO), another user's, or unreadable in
  // time. Read again every pass; an answer from `since` on is fresh enough.
  virtual Observed<FileProgress> progress(const std::string& path, uid_t owner, long long since) = 0;
  // Marker mtime of the newest complete checkpoint in `dir` that `owner` owns, in nanoseconds
  // (a checkpoint written just before a checkpoint signal must be told from one written just
  // after it); 0 when none. An answer from `since` on is fresh enough; a new read is made when the
  // newest one started before `want_since` (at least `since`).
  virtual Observed<long long> newest_checkpoint_ns(const std::string& dir, const std::string& marker, uid_t owner,
                                                   long long since, long long want_since) = 0;
  // Fences the checkpoints in `dir` of the job's attempt `attempt` (SAFE_ATTEMPT: restart count + 1),
  // which is being superseded (common/checkpoint_fence.hpp): the name of the one checkpoint of it
  // still usable ("" none), or unknown when the fence could not be written in time. Written once:
  // later calls for the same attempt answer what the first did.
  virtual Observed<std::string> fence_attempt(const std::string& dir, const std::string& marker, uid_t owner,
                                              std::uint32_t job_id, int attempt) = 0;
  // Critical failing checks safe-epilog recorded for the job on `nodes` at or after
  // `attempt_start` (kind "epilog").
  virtual Observed<std::vector<NodeFault>> epilog_evidence(std::uint32_t job_id, const std::vector<std::string>& nodes,
                                                           long long attempt_start, long long since) = 0;
  // safe-prolog's refusal of the job's run `restart_count` (kind "prolog": the node and its first
  // failing check), or nullopt when it refused no such run.
  virtual Observed<std::optional<NodeFault>> prolog_refusal(std::uint32_t job_id, int restart_count,
                                                            long long since) = 0;
  // The last `max_bytes` of a file `owner` owns (user evidence: never trusted for a diagnosis).
  virtual Observed<std::string> tail(const std::string& path, uid_t owner, std::size_t max_bytes, long long since) = 0;
  // Deletes the prolog's and epilog's records of the job on `nodes` (a Slurm host list, "n[1-4]",
  // or several joined by commas), once its attempt is classified. The list is expanded off the
  // pass, with the deleting.
  virtual void forget_evidence(std::uint32_t job_id, const std::string& nodes) = 0;
};

// The heartbeat file a job may touch to show progress: <ckpt_dir>/.safe-heartbeat.
std::string heartbeat_path(const std::string& ckpt_dir);

// Real files, read on DeadlineReader workers: users' files (as the job's user's) on `users`,
// evidence from `evidence_dir` (root's, written by the node programs) on `evidence`, so that
// users' hung mounts, which can take every worker of one reader, never hold up the evidence
// that classifies a failure.
class AsyncJobFiles final : public JobFiles {
 public:
  AsyncJobFiles(std::string evidence_dir, DeadlineReader& users, DeadlineReader& evidence);
  Observed<FileProgress> progress(const std::string& path, uid_t owner, long long since) override;
  Observed<long long> newest_checkpoint_ns(const std::string& dir, const std::string& marker, uid_t owner,
                                           long long since, long long want_since) override;
  Observed<std::string> fence_attempt(const std::string& dir, const std::string& marker, uid_t owner,
                                      std::uint32_t job_id, int attempt) override;
  Observed<std::vector<NodeFault>> epilog_evidence(std::uint32_t job_id, const std::vector<std::string>& nodes,
                                                   long long attempt_start, long long since) override;
  Observed<std::optional<NodeFault>> prolog_refusal(std::uint32_t job_id, int restart_count, long long since) override;
  Observed<std::string> tail(const std::string& path, uid_t owner, std::size_t max_bytes, long long since) override;
  void forget_evidence(std::uint32_t job_id, const std::string& nodes) override;

  // Deletes evidence files older than `before` (unix seconds), at most `max_entries` looked at: the
  // records of jobs safed never classified (it was down, or they were not SaFE jobs).
  void sweep_evidence(long long before, std::size_t max_entries);

 private:
  std::string evidence_dir_;
  DeadlineReader& users_;
  DeadlineReader& evidence_;
};

}  // namespace safe
