#include "controller/safed/spare_pool.hpp"

#include <algorithm>

#include "common/hostlist.hpp"

namespace safe {

int spare_pool_size(const SparePoolConfig& config) {
  if (config.count > 0) return config.count;
  return static_cast<int>(expand_hostlist(config.nodes).size());
}

SparePoolPlan plan_spare_pool(const SparePoolView& view, const std::map<std::string, const SlurmNode*>& nodes) {
  SparePoolPlan plan;
  plan.wanted = view.config ? spare_pool_size(*view.config) : 0;
  std::vector<std::string> candidates =
      view.config && !view.config->nodes.empty() ? expand_hostlist(view.config->nodes) : view.partition_nodes;
  std::set<std::string> in_partition(view.partition_nodes.begin(), view.partition_nodes.end());
  auto state = [&](const std::string& name) -> const SlurmNode* {
    auto it = nodes.find(name);
    return it == nodes.end() ? nullptr : it->second;
  };
  auto healthy_idle = [&](const std::string& name) {
    const SlurmNode* n = state(name);
    return n && !n->down && !n->drain && !n->busy && !view.unanswered.count(name);
  };
  std::set<std::string> taken(view.claimed.begin(), view.claimed.end());
  // Free spares: those in the reservation first (no churn), then the rest in the pool's order.
  auto add_free = [&](bool reserved_pass) {
    for (const std::string& name : candidates) {
      if (static_cast<int>(plan.free.size()) >= plan.wanted) return;
      if (taken.count(name) || !in_partition.count(name) || view.reserved.count(name) != reserved_pass) continue;
      if (!reserved_pass && view.other_reservations.count(name)) continue;
      if (!healthy_idle(name)) continue;
      plan.free.push_back(name);
      taken.insert(name);
    }
  };
  add_free(true);
  add_free(false);
  auto add_repairing = [&](bool reserved_pass) {
    for (const std::string& name : candidates) {
      if (static_cast<int>(plan.free.size() + plan.repairing.size()) >= plan.wanted) return;
      if (taken.count(name) || !in_partition.count(name) || view.reserved.count(name) != reserved_pass) continue;
      if (!reserved_pass && view.other_reservations.count(name)) continue;
      if (!view.out_for_repair.count(name)) continue;
      const SlurmNode* n = state(name);
      if (!n || n->busy) continue;  // still winding a job down: it joins once that is over
      plan.repairing.push_back(name);
      taken.insert(name);
    }
  };
  add_repairing(true);
  add_repairing(false);
  for (const std::string& name : view.partition_nodes)
    if (taken.count(name)) plan.nodes.push_back(name);
  for (const std::string& name : view.claimed)  // a claimed node outside the partition's list stays too
    if (!in_partition.count(name)) plan.nodes.push_back(name);
  return plan;
}

std::vector<SpareGrant> grant_spares(std::vector<SpareRequest> requests, std::vector<std::string> free_spares) {
  std::sort(requests.begin(), requests.end(), [](const SpareRequest& a, const SpareRequest& b) {
    if (a.planned != b.planned) return b.planned;  // a job that is down before one that runs shrunk
    if (a.nodes != b.nodes) return a.nodes > b.nodes;
    if (a.fault_time != b.fault_time) return a.fault_time < b.fault_time;
    return a.job_id < b.job_id;
  });
  std::vector<SpareGrant> grants;
  std::set<std::string> claimed;
  for (const SpareRequest& r : requests) {
    SpareGrant g{r.job_id, {}, {}};
    for (const std::string& n : r.ready)
      if (!claimed.count(n) && g.own.size() < r.nodes) g.own.push_back(n);
    // A node another list saw as ready is no spare for anyone (the pass's views may overlap).
    std::erase_if(free_spares, [&](const std::string& n) { return std::find(g.own.begin(), g.own.end(), n) != g.own.end(); });
    std::size_t need = r.nodes - g.own.size();
    std::vector<std::string> eligible;
    for (const std::string& n : free_spares)
      if (eligible.size() < need && std::find(r.excluded.begin(), r.excluded.end(), n) == r.excluded.end())
        eligible.push_back(n);
    if (eligible.size() < need) continue;
    g.spares = eligible;
    std::erase_if(free_spares, [&](const std::string& n) { return std::find(eligible.begin(), eligible.end(), n) != eligible.end(); });
    for (const std::string& n : g.own) claimed.insert(n);
    grants.push_back(std::move(g));
  }
  return grants;
}

}  // namespace safe
