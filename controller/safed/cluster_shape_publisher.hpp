// safed's side of the cluster shape (common/cluster_shape.hpp): built from Slurm's partitions and
// nodes, written to <controller.state_dir>/cluster-shape.json for the job_submit plugin whenever
// it changes, and at least every few minutes (its age tells the plugin safed still runs).
#pragma once

#include <string>
#include <vector>

#include "common/cluster_shape.hpp"
#include "common/result.hpp"
#include "common/slurm/client.hpp"

namespace safe {

ClusterShape build_cluster_shape(const std::vector<SlurmPartition>& partitions, const std::vector<SlurmNode>& nodes,
                                 long long now);

class ClusterShapePublisher {
 public:
  explicit ClusterShapePublisher(std::string path) : path_(std::move(path)) {}
  // Writes `shape` when it differs from the last one written, or that one is `refresh_s` old.
  // Atomic (a temporary file renamed into place), mode 0644, so the plugin never reads half a file.
  Status publish(const ClusterShape& shape, long long now, long long refresh_s = 300);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string last_;  // the last shape written, without its time
  long long last_written_ = 0;
};

}  // namespace safe
