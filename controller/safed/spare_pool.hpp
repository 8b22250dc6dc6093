// Hot spares (failover.spares), as pure decisions: which nodes each partition's spare reservation
// holds after a pass, and which failing-over jobs get spares when several want them. The planner
// (failover_spares.cpp) gathers the inputs from Slurm's view and acts on the result.
//
// A pool's reservation (safe_spares_PARTITION, common/spare_reservation.hpp) holds three kinds of
// node: free spares (healthy, idle: what a failover can take at once), nodes claimed for a
// failing-over job safed has just placed there (the spares it takes and the job's own healthy
// nodes, so that no other job takes them before it starts), and, while the pool is short, nodes
// SaFE took out of service (they come back as spares once their checks pass, before the queue can
// take them). A node whose job runs leaves the reservation: it is an ordinary busy node again.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/slurm/model.hpp"

namespace safe {

// One pool as a pass sees it.
struct SparePoolView {
  const SparePoolConfig* config = nullptr;
  std::vector<std::string> partition_nodes;    // the partition's nodes, in Slurm's order
  std::set<std::string> reserved;              // the reservation's nodes now
  std::set<std::string> claimed;               // nodes held for jobs safed placed there, not yet running
  std::set<std::string> other_reservations;    // nodes in any other reservation: never spares
  std::set<std::string> out_for_repair;        // nodes SaFE took out of service (drained or set down)
  std::set<std::string> unanswered;            // nodes whose slurmd failed safed's latest probe: never free
};

struct SparePoolPlan {
  std::vector<std::string> nodes;      // the reservation's nodes after this pass
  std::vector<std::string> free;       // free spares among them
  std::vector<std::string> repairing;  // out of service, kept to come back as spares
  int wanted = 0;                      // the pool's size (failover.spares[].count)
  bool operator==(const SparePoolPlan&) const = default;
};

// The pool's size: its count, or with only `nodes` as many nodes as that names.
int spare_pool_size(const SparePoolConfig& config);

// Keeps the claimed nodes; then up to the pool's size of free spares, those in the reservation
// first, then healthy idle nodes of the partition (or of the pool's `nodes`) in no reservation;
// then, while that is short, nodes out for repair (those in the reservation first). Everything
// else leaves: nodes a job runs on, extra spares, out-of-service nodes the pool no longer needs.
// `nodes`: Slurm's view, by name.
SparePoolPlan plan_spare_pool(const SparePoolView& view, const std::map<std::string, const SlurmNode*>& nodes);

// A failing-over job that cannot start now without spares.
struct SpareRequest {
  std::uint32_t job_id = 0;
  std::uint32_t nodes = 0;            // the job's node count
  long long fault_time = 0;           // when its failover's fault struck
  std::vector<std::string> ready;     // nodes it could run on now: those held for it, then free ones
  std::vector<std::string> excluded;  // nodes it must not get as spares (its own exclusions, its bad nodes)
  bool planned = false;               // an elastic job's grow back: served after every failover
  bool operator==(const SpareRequest&) const = default;
};

struct SpareGrant {
  std::uint32_t job_id = 0;
  std::vector<std::string> spares;  // the free spares it takes
  std::vector<std::string> own;     // its ready nodes, claimed with them
  bool operator==(const SpareGrant&) const = default;
};

// Who gets the free spares: the largest job first (its restart brings back the most GPUs per
// spare-minute of waiting; a small job that took the spares first could leave a large one
// waiting for the queue), then the one whose fault is oldest, then the lowest job id. A job gets
// the spares it lacks only when enough are free for it to start at once (one whose ready nodes
// suffice gets none, and its ready nodes); ready nodes granted to one job are no longer ready for
// the next. A job granted nothing waits in the queue as before.
std::vector<SpareGrant> grant_spares(std::vector<SpareRequest> requests, std::vector<std::string> free_spares);

}  // namespace safe
