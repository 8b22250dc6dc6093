// The facts about Slurm's partitions that a workspace GPU charge depends on and that the
// job_submit plugin cannot ask slurmctld for (it runs inside slurmctld, with its locks held): how
// many GPUs and sockets a node of each partition has at most, how many nodes it has, whether it
// gives every job whole nodes (OverSubscribe=EXCLUSIVE), and which partition is the default.
// safed reads them from Slurm and publishes them in <controller.state_dir>/cluster-shape.json;
// the plugin reads that file (one stat() per submission unless it changed).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace safe {

struct PartitionShape {
  std::string name;
  bool is_default = false;
  bool whole_node = false;  // OverSubscribe=EXCLUSIVE: every job gets its nodes whole
  int nodes = 0;
  int gpus_per_node = 0;     // the most GPUs on any of its nodes
  int sockets_per_node = 1;  // the most sockets on any of its nodes
};

struct ClusterShape {
  long long written = 0;  // unix seconds
  std::vector<PartitionShape> partitions;
  const PartitionShape* find(std::string_view name) const;
  const PartitionShape* default_partition() const;
};

std::string to_json(const ClusterShape& shape);
std::optional<ClusterShape> parse_cluster_shape(std::string_view json);

// GPUs in a node's GRES as Slurm reports it: "gpu:8(S:0-1)", "gpu:a100:4(S:0),gpu:v100:2", "gpu:8".
int gpus_in_node_gres(std::string_view gres);

// Where safed publishes the shape, from controller.state_dir.
std::string cluster_shape_path(const std::string& controller_state_dir);

}  // namespace safe
