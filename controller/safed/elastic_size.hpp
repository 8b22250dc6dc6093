// Shrink and continue, grow back: the pure decisions about an elastic job's node count
// (--safe-min-nodes=M, --safe-node-multiple=K; submitted for N nodes). A failover that cannot get
// N nodes within failover.shrink_after_s restarts the job on the most nodes it can have now (at
// least M, a multiple of K); once N - n more nodes are free beside the n it runs on, it grows back
// to N through a planned restart (checkpoint signal, requeue), rate-limited like a failover and
// costing no retry.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/slurm/model.hpp"

namespace safe {

struct ElasticSize {
  int full = 0;      // N: the node count it was submitted with
  int min = 0;       // M (0: not elastic)
  int multiple = 1;  // K
  bool elastic() const { return min > 0 && full >= min; }
};

// A node's kind as far as a job can tell from Slurm's node list: its GRES and CPU count. A job
// that ran on h100 nodes cannot be placed on a100 nodes of the same partition.
using NodeKind = std::pair<std::string, int>;
NodeKind node_kind(const SlurmNode& n);

// The nodes a job could start on now: up, in service, in no reservation, not busy with another
// job, in `partition_nodes` (empty: no bound known), not in `excluded`, and of one of `kinds`
// (empty: any).
long long free_nodes_for(const std::vector<SlurmNode>& nodes, const std::set<std::string>& partition_nodes,
                         const std::set<std::string>& excluded, const std::set<NodeKind>& kinds);

// The node count a restart (or a waiting restart) of the job asks for, with `usable` nodes free:
// N when they can hold it. Otherwise the most they allow, a multiple of K, as long as that is not
// under `ran_on` (the size it ran at before the failure: a shrunk job need not wait to run as it
// did) or, once it `may_shrink` (failover.shrink_after_s has passed), under M. Else N: it waits,
// as a job without the option does.
int elastic_node_count(const ElasticSize& e, long long usable, bool may_shrink, int ran_on);

// A job running on `running` nodes grows back once the free nodes beside its own make up N.
bool grow_back_due(const ElasticSize& e, int running, long long free_beside);

}  // namespace safe
