// SaFE's record on a Slurm job, kept in the job's AdminComment (users cannot change it, admins
// see it in `scontrol show job`), e.g.
//   safe: ws=ml retries=0/3 health=strict sig=USR1@120 hang=0 gpus=16 sub=1764600000 ckpt=/ckpt/run1
// `retries=USED/MAX`: requeues SaFE has made / the job's --safe-retries after policy.
// `sub=`: when SaFE's admission saw the submission (unix seconds). Slurm resets a job's own
// SubmitTime at every requeue, and reuses job ids; the id with this time names one job for good.
// The controller appends what it learns (last=...); the format is key=value words, and `last=`,
// whose value may contain spaces, always comes last.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/admission.hpp"

namespace safe {

struct JobMetadata {
  JobSettings settings;
  int retries_used = 0;
  long long submitted = 0;   // 0: a record from before SaFE wrote sub=
  std::string last_failure;  // free text, e.g. "node_fault n3 gpu2 uncorrectable ECC"
};

constexpr std::string_view kMetadataPrefix = "safe:";

std::string format_job_metadata(const JobMetadata& m);
// nullopt when `admin_comment` holds no SaFE record.
std::optional<JobMetadata> parse_job_metadata(std::string_view admin_comment);

// Puts `record` into an existing AdminComment: replaces an older SaFE record, keeps an
// administrator's own text in front of it.
std::string merge_admin_comment(std::string_view existing, std::string_view record);

}  // namespace safe
