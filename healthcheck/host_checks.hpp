// Node checks beyond the GPUs: physical memory, required mounts, InfiniBand/RDMA ports and the
// GPU-to-NUMA mapping. Each reads the node through NodeFs, so tests run them on fixture trees.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/gpu_snapshot.hpp"
#include "common/health_check.hpp"
#include "common/node_fs.hpp"

namespace safe {

// MemTotal of /proc/meminfo against health.min_memory_gib (0: not checked).
CheckResult check_memory(const NodeFs& fs, int min_memory_gib);

// Each required mount: listed in /proc/mounts, mounted read-write, a file can be created in it,
// and free space and inodes above the limits.
CheckResult check_mounts(const NodeFs& fs, const std::vector<MountRequirement>& mounts);

// Every port under /sys/class/infiniband: state ACTIVE and rate >= min_rate_gbps (0: not checked).
CheckResult check_ib_ports(const NodeFs& fs, int min_rate_gbps);

// PCI bus id -> NUMA node.
using NumaMap = std::map<std::string, int>;

// The reference file: "BUS_ID NUMA_NODE" per line, '#' comments (safe-healthcheck --print-numa-map
// writes one from a known-good node).
Result<NumaMap> parse_numa_reference(const std::string& text);
std::string format_numa_map(const NumaMap& map);
CheckResult compare_numa(const NumaMap& reference, const NumaMap& actual);
// The map a GPU snapshot reports (sim backend, or what the library said).
NumaMap numa_map_from_snapshot(const GpuSnapshot& snapshot);

}  // namespace safe
