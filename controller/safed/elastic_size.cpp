#include "controller/safed/elastic_size.hpp"

#include <algorithm>

namespace safe {

long long free_nodes_for(const std::vector<SlurmNode>& nodes, const std::set<std::string>& partition_nodes,
                         const std::set<std::string>& excluded) {
  long long count = 0;
  for (const SlurmNode& n : nodes) {
    if (n.down || n.drain || n.reserved || excluded.count(n.name)) continue;
    if (!partition_nodes.empty() && !partition_nodes.count(n.name)) continue;
    if (n.busy) continue;
    ++count;
  }
  return count;
}

int elastic_node_count(const ElasticSize& e, long long usable, bool may_shrink) {
  if (!e.elastic() || usable >= e.full || !may_shrink) return e.full;
  int step = std::max(1, e.multiple);
  long long n = usable / step * step;
  return n >= e.min ? static_cast<int>(n) : e.full;
}

bool grow_back_due(const ElasticSize& e, int running, long long free_beside) {
  return e.elastic() && running < e.full && running + free_beside >= e.full;
}

}  // namespace safe
