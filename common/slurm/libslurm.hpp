// The Slurm seam over libslurm (slurm_load_jobs/slurm_load_node with update times, so an unchanged
// cluster costs one small RPC per poll). Not thread-safe: it keeps those update times between
// calls; safed and the bridge each call it under a lock of their own.
#pragma once

#include <memory>

#include "common/slurm/client.hpp"

namespace safe {

// Calls slurm_init once per process; SLURM_CONF selects the cluster.
std::unique_ptr<SlurmClient> make_libslurm_client();

}  // namespace safe
