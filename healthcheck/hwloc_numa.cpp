#include "healthcheck/hwloc_numa.hpp"

#include <hwloc.h>

#include <cstdio>

namespace safe {

Result<NumaMap> hwloc_gpu_numa_map() {
  hwloc_topology_t topology;
  if (hwloc_topology_init(&topology) != 0) return Error{"hwloc_topology_init failed"};
  hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topology) != 0) {
    hwloc_topology_destroy(topology);
    return Error{"hwloc_topology_load failed"};
  }
  NumaMap map;
  for (hwloc_obj_t pci = hwloc_get_next_pcidev(topology, nullptr); pci; pci = hwloc_get_next_pcidev(topology, pci)) {
    const auto& a = pci->attr->pcidev;
    bool gpu_vendor = a.vendor_id == 0x1002 || a.vendor_id == 0x10de;
    unsigned cls = a.class_id;
    if (!gpu_vendor || !(cls == 0x0300 || cls == 0x0302 || cls == 0x0380)) continue;
    char bus[32];
    std::snprintf(bus, sizeof bus, "%04x:%02x:%02x.%x", static_cast<unsigned>(a.domain), a.bus, a.dev, a.func);
    hwloc_obj_t parent = hwloc_get_non_io_ancestor_obj(topology, pci);
    int node = parent && parent->nodeset ? hwloc_bitmap_first(parent->nodeset) : -1;
    map[bus] = node;
  }
  hwloc_topology_destroy(topology);
  return map;
}

}  // namespace safe
