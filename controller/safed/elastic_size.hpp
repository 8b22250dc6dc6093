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
#include <vector>

#include "common/slurm/model.hpp"

namespace safe {

struct ElasticSize {
  int full = 0;      // N: the node count it was submitted with
  int min = 0;       // M (0: not elastic)
  int multiple = 1;  // K
  bool elastic() const { return min > 0 && full >= min; }
};

// The nodes a job could start on now: up, in service, in no reservation, not busy with another
// job, in `partition_nodes` (empty: no bound known) and not in `excluded`.
long long free_nodes_for(const std::vector<SlurmNode>& nodes, const std::set<std::string>& partition_nodes,
                         const std::set<std::string>& excluded);

// The node count a restart (or a waiting restart) of the job asks for: N when `usable` nodes can
// hold it or while it may not shrink yet; after that the most it can have, rounded down to a
// multiple of K, and never under M (then N: it waits, as a job without the option does).
int elastic_node_count(const ElasticSize& e, long long usable, bool may_shrink);

// A job running on `running` nodes grows back once the free nodes beside its own make up N.
bool grow_back_due(const ElasticSize& e, int running, long long free_beside);

}  // namespace safe
