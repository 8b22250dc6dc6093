// What safed reads from the file system about a job: progress (output size, heartbeat), the
// newest complete checkpoint, and the prolog's and epilog's evidence. A seam so the planner's tests need no
// files; in production these are shared file systems the controller host mounts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/failure_classification.hpp"

namespace safe {

struct FileProgress {
  bool exists = false;
  long long size = 0;
  long long mtime = 0;
};

class JobFiles {
 public:
  virtual ~JobFiles() = default;
  virtual FileProgress stat_file(const std::string& path) = 0;
  // Marker mtime of the newest complete checkpoint in `dir`, 0 when none.
  virtual long long newest_checkpoint_time(const std::string& dir, const std::string& marker) = 0;
  // Critical failing checks the prolog/epilog recorded for the job (kind "epilog").
  virtual std::vector<NodeFault> evidence(std::uint32_t job_id) = 0;
  // The last `max_bytes` of a file ("" when it cannot be read).
  virtual std::string tail(const std::string& path, std::size_t max_bytes) = 0;
  // The prolog gate's refusal of the job's run `restart_count` (kind "prolog": the node and its
  // first failing check), when safe-prolog refused exactly that run.
  virtual std::optional<NodeFault> prolog_refusal(std::uint32_t job_id, int restart_count) = 0;
};

// Real files; evidence from <evidence_dir>/<job_id>.json and <job_id>.*.json (safe-epilog).
class LocalJobFiles final : public JobFiles {
 public:
  explicit LocalJobFiles(std::string evidence_dir) : evidence_dir_(std::move(evidence_dir)) {}
  FileProgress stat_file(const std::string& path) override;
  long long newest_checkpoint_time(const std::string& dir, const std::string& marker) override;
  std::vector<NodeFault> evidence(std::uint32_t job_id) override;
  std::string tail(const std::string& path, std::size_t max_bytes) override;
  std::optional<NodeFault> prolog_refusal(std::uint32_t job_id, int restart_count) override;

 private:
  std::string evidence_dir_;
};

// The heartbeat file a job may touch to show progress: <ckpt_dir>/.safe-heartbeat.
std::string heartbeat_path(const std::string& ckpt_dir);

}  // namespace safe
