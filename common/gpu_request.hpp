// How many GPUs a job asks for, from every way Slurm lets it ask: --gpus (per job),
// --gpus-per-node and --gres=gpu (per node), --gpus-per-task, --gpus-per-socket. Typed requests
// (gpu:mi300x:8) count like untyped ones. Workspace GPU quotas are charged this number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace safe {

// The job_desc fields that matter, copied out of Slurm's struct. Counts of 0 mean "not given".
struct GpuRequest {
  std::string tres_per_job;     // e.g. "gres:gpu:16"
  std::string tres_per_node;    // e.g. "gres:gpu:mi300x:8,gres:nic:1"
  std::string tres_per_task;
  std::string tres_per_socket;
  uint32_t min_nodes = 0;
  uint32_t num_tasks = 0;
  uint32_t ntasks_per_node = 0;
  uint32_t sockets_per_node = 0;
};

// GPUs named in one TRES list ("gres:gpu:2,gres/gpu:a100:1,license:x:1" -> 3); nullopt when a GPU
// entry is malformed. Entries for other resources are ignored.
std::optional<long long> gpus_in_tres(std::string_view tres);

struct GpuCount {
  long long gpus = 0;
  std::string error;  // non-empty: the request could not be read; the message says what
};

// Total GPUs of the job. Per-node counts multiply by the node count (at least 1), per-task by the
// task count (num_tasks, else ntasks_per_node x nodes, else 1 per node), per-socket by sockets x
// nodes. When a job gives several forms they must agree in Slurm; the largest is charged, so a
// quota is never undercharged.
GpuCount count_requested_gpus(const GpuRequest& request);

}  // namespace safe
