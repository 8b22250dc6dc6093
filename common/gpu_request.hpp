// How many GPUs a job can get, from every way Slurm lets it ask for them (--gpus per job,
// --gpus-per-node and --gres=gpu per node, --gpus-per-task, --gpus-per-socket, --ntasks-per-gpu)
// and every way it gets them without asking (--exclusive, -S, an exclusive partition: whole
// nodes). Typed requests (gpu:mi300x:8) count like untyped ones. Workspace GPU quotas are charged
// this number; docs/user-guide.md says how each form is counted.
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
  uint32_t max_nodes = 0;
  uint32_t num_tasks = 0;
  uint32_t ntasks_per_node = 0;
  uint32_t sockets_per_node = 0;
  uint32_t ntasks_per_tres = 0;  // --ntasks-per-gpu
  bool exclusive = false;        // --exclusive (OverSubscribe=NO): whole nodes, every GPU on them
  bool core_spec = false;        // -S/--core-spec or --thread-spec: whole nodes too
};

// GPUs named in one TRES list ("gres:gpu:2,gres/gpu:a100:1,license:x:1" -> 3); nullopt when a GPU
// entry is malformed. Entries for other resources are ignored.
std::optional<long long> gpus_in_tres(std::string_view tres);

// What the nodes a job may land on can give it (the most of any node of its partitions, from the
// cluster shape safed publishes); `known` false when there is no shape.
struct NodeCapacity {
  bool known = false;
  int gpus_per_node = 0;
  int sockets_per_node = 1;
  int nodes = 0;            // nodes in the partitions; 0: no bound known
  bool whole_node = false;  // a partition that gives jobs whole nodes (OverSubscribe=EXCLUSIVE)
};

struct GpuCharge {
  long long gpus = 0;
  std::string error;        // non-empty: the request could not be read; says which part
  std::string how;          // how the number came about, for messages ("2 nodes x 8 GPUs (--exclusive)")
  bool needs_capacity = false;  // whole nodes or sockets were asked for and `capacity` is not known
  // A node count the job must not exceed to stay within what it is charged (Slurm's max_nodes),
  // when the job gave none and the charge depends on its node count.
  std::optional<uint32_t> max_nodes;
  // The job asks for shares of GPUs (gres/shard, gres/mps): on a site that configures them they
  // run on GPUs no GPU count covers, so a workspace with a quota refuses them.
  bool gpu_shares = false;
};

// The most GPUs Slurm can allocate to the job, which is what a workspace quota must charge: never
// less. Node counts: the job's maximum (-N MIN-MAX), else its task count (a node has at least one
// task), else its minimum, which then becomes its maximum too (`max_nodes`); capped by the
// partitions' node count. Whole-node jobs (--exclusive, -S, an exclusive partition) are charged
// every GPU of each node; per-socket requests every socket of each node; per-task requests the
// most tasks the job can run. When a job gives several forms the largest is charged. Forms that
// depend on the node's GPUs or sockets need `capacity`: without it `needs_capacity` says so.
GpuCharge charge_gpus(const GpuRequest& request, const NodeCapacity& capacity);

}  // namespace safe
