// ETTR per workspace over time (GET /api/v1/ettr-history; the web console's failovers page): the
// jobs that ended in each period, by workspace, as one ETTR: their productive seconds over their
// wall seconds since they first ran, summed (a long job weighs more than a short one). A job
// counts once, in the period it ended, with its whole life: its failovers show when it is done.
// Jobs still running are in the live figure (safe_ettr, GET /api/v1/workspaces), not here.
#pragma once

#include <string>
#include <vector>

#include "controller/safed/lost_work.hpp"
#include "controller/safed/state_store.hpp"

namespace safe {

struct EttrPeriod {
  std::string workspace;  // "" for jobs in no workspace
  long long start = 0;    // since + k * step
  int jobs = 0;
  WorkspaceTime time;
};

// The periods [since + k*step, since + (k+1)*step) that have jobs ending in them, by workspace
// (name order), then period. `step` > 0; jobs that ended before `since` are left out.
std::vector<EttrPeriod> ettr_by_period(const std::vector<EndedJobTime>& jobs, long long since, long long step);

std::string render_ettr_history_json(StateStore& store, long long since, long long step);

}  // namespace safe
