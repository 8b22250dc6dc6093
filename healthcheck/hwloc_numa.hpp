// The GPU-to-NUMA map of the running machine, from hwloc (PCI devices of GPU class and their
// nearest non-I/O ancestor's NUMA nodes). hwloc's PCI link speed is not used: it may report the
// maximum, not the negotiated link.
#pragma once

#include <optional>
#include <string>

#include "healthcheck/host_checks.hpp"

namespace safe {

Result<NumaMap> hwloc_gpu_numa_map();

}  // namespace safe
