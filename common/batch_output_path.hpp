// The file a batch job's output goes to, named as slurmstepd names it from the job's -o/--output
// pattern (its fname_create), so that safed watches the file the job really writes. Slurm's own
// client call for this (slurm_get_job_stdout) knows only %A %a %j %u %x; slurmstepd knows more,
// and its rules changed in 24.11 (Slurm's shared expand_stdio_fields), hence two dialects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace safe {

enum class OutputPatternDialect {
  slurmd_fname,  // up to 24.05: src/slurmd/common/fname.c
  stdio_fields,  // 24.11 on: src/common/print_fields.c expand_stdio_fields
};

// What the patterns refer to, for the batch step of one run of a job.
struct BatchOutputContext {
  std::uint32_t job_id = 0;
  std::uint32_t array_job_id = 0;           // 0: not an array
  std::uint32_t array_task_id = 0xfffffffe; // NO_VAL: not an array
  int restart_count = 0;
  std::string job_name;
  std::string user_name;
  std::string batch_node;       // NodeName of the node running the batch step (%N from 24.11)
  std::string batch_host_short; // that node's host name up to the first '.' (%N before 24.11)
  std::string work_dir;
};

// The absolute path, or "" when the output goes nowhere a file can be watched: an empty pattern
// with no default, or a "single task" pattern (a bare number other than 0) that sends the batch
// step's output to /dev/null. `pattern` empty: Slurm's default (slurm-%J.out, or slurm-%A_%a.out
// for an array task).
std::string batch_output_path(std::string_view pattern, const BatchOutputContext& context,
                              OutputPatternDialect dialect);

}  // namespace safe
