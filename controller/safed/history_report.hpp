// safed's history of failovers and node faults as API documents (GET /api/v1/failovers and
// /api/v1/node-faults): what the web console's failovers and cluster pages show, through the
// bridge, and what scripts can read. Failovers are a job's: a user sees only their own jobs'
// (`user` set), an administrator all (nullopt). Node faults belong to no user.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <jansson.h>

#include "controller/safed/state_store.hpp"

namespace safe {

// One failover as safed's documents show it: the run that failed (from 1), class, evidence, bad
// nodes, phase, its times, and MTTR (the fault to the job running again) once running again.
json_t* failover_json(const FailoverRecord& f);

// Failovers whose fault came at or after `since`, oldest first: the job, the run that failed
// (1-based), the class and evidence, the nodes, the phase, the times, and MTTR (the fault to the
// job running again) once it is running again.
std::string render_failovers_json(StateStore& store, long long since, std::optional<std::uint32_t> user);

// A node's faults at or after `since`, oldest first; without a node, the newest `limit` of the
// cluster's at or after `since`, oldest first.
std::string render_node_faults_json(StateStore& store, const std::string& node, long long since, int limit);

}  // namespace safe
