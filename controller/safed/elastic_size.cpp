#include "controller/safed/elastic_size.hpp"

#include <algorithm>

namespace safe {

NodeKind node_kind(const SlurmNode& n) { return {n.gres, n.cpus}; }

long long free_nodes_for(const std::vector<SlurmNode>& nodes, const std::set<std::string>& partition_nodes,
                         const std::set<std::string>& excluded, const std::set<NodeKind>& kinds) {
  long long count = 0;
  for (const SlurmNode& n : nodes) {
    if (n.down || n.drain || n.reserved || n.busy || excluded.count(n.name)) continue;
    if (!partition_nodes.empty() && !partition_nodes.count(n.name)) continue;
    if (!kinds.empty() && !kinds.count(node_kind(n))) continue;
    ++count;
  }
  return count;
}

int elastic_node_count(const ElasticSize& e, long long usable, bool may_shrink, int ran_on) {
  if (!e.elastic() || usable >= e.full) return e.full;
  int floor = may_shrink ? e.min : (ran_on > 0 && ran_on < e.full ? std::max(ran_on, e.min) : e.full);
  int step = std::max(1, e.multiple);
  long long n = usable / step * step;
  return n >= floor ? static_cast<int>(n) : e.full;
}

bool grow_back_due(const ElasticSize& e, int running, long long free_beside) {
  return e.elastic() && running < e.full && running + free_beside >= e.full;
}

}  // namespace safe
