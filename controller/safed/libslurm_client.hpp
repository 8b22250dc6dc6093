// SlurmClient over libslurm (slurm_load_jobs/slurm_load_node with update times, so an unchanged
// cluster costs one small RPC per poll).
#pragma once

#include <memory>

#include "controller/safed/slurm_client.hpp"

namespace safe {

// Calls slurm_init once per process; SLURM_CONF selects the cluster.
std::unique_ptr<SlurmClient> make_libslurm_client();

}  // namespace safe
