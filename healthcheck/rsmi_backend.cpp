#include "healthcheck/rsmi_backend.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <vector>

namespace safe {
namespace {

template <class F>
bool bind(void* lib, const char* symbol, F& out, std::string& error) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!out) error = std::string("librocm_smi64: missing ") + symbol;
  return out != nullptr;
}

std::string bdf_to_bus_id(uint64_t bdf) {
  char text[32];
  std::snprintf(text, sizeof text, "%04x:%02x:%02x.%x", static_cast<unsigned>((bdf >> 32) & 0xffffffff),
                static_cast<unsigned>((bdf >> 8) & 0xff), static_cast<unsigned>((bdf >> 3) & 0x1f),
                static_cast<unsigned>(bdf & 0x7));
  return text;
}

}  // namespace

Result<RsmiApi> load_rsmi_api() {
  void* lib = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) lib = dlopen("librocm_smi64.so", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Error{std::string("cannot load librocm_smi64: ") + dlerror()};
  RsmiApi api;
  std::string error;
  bool ok = bind(lib, "rsmi_init", api.init, error) && bind(lib, "rsmi_shut_down", api.shut_down, error) &&
            bind(lib, "rsmi_num_monitor_devices", api.num_monitor_devices, error) &&
            bind(lib, "rsmi_dev_pci_id_get", api.dev_pci_id_get, error) &&
            bind(lib, "rsmi_dev_temp_metric_get", api.dev_temp_metric_get, error) &&
            bind(lib, "rsmi_dev_ecc_count_get", api.dev_ecc_count_get, error) &&
            bind(lib, "rsmi_dev_memory_reserved_pages_get", api.dev_memory_reserved_pages_get, error) &&
            bind(lib, "rsmi_dev_pci_replay_counter_get", api.dev_pci_replay_counter_get, error) &&
            bind(lib, "rsmi_dev_xgmi_error_status", api.dev_xgmi_error_status, error) &&
            bind(lib, "rsmi_dev_memory_usage_get", api.dev_memory_usage_get, error) &&
            bind(lib, "rsmi_dev_memory_total_get", api.dev_memory_total_get, error) &&
            bind(lib, "rsmi_topo_numa_affinity_get", api.topo_numa_affinity_get, error) &&
            bind(lib, "rsmi_compute_process_info_get", api.compute_process_info_get, error) &&
            bind(lib, "rsmi_compute_process_gpus_get", api.compute_process_gpus_get, error);
  if (!ok) return Error{error};  // the handle stays open: this is a short-lived child process
  return api;
}

GpuSnapshot collect_rsmi(const RsmiApi& api, const NodeFs& fs) {
  GpuSnapshot s;
  s.backend = "rsmi";
  s.pci_gpu_count = count_pci_gpus(fs);
  if (rsmi_status_t st = api.init(0); st != RSMI_STATUS_SUCCESS) {
    s.ok = false;
    s.error = "rsmi_init failed (status " + std::to_string(st) + ")";
    return s;
  }
  uint32_t count = 0;
  if (api.num_monitor_devices(&count) != RSMI_STATUS_SUCCESS) {
    s.ok = false;
    s.error = "rsmi_num_monitor_devices failed";
    api.shut_down();
    return s;
  }
  for (uint32_t dv = 0; dv < count; ++dv) {
    GpuDevice g;
    g.index = static_cast<int>(dv);
    uint64_t bdf = 0;
    if (rsmi_status_t st = api.dev_pci_id_get(dv, &bdf); st != RSMI_STATUS_SUCCESS) {
      g.responsive = false;
      g.error = "rsmi_dev_pci_id_get failed (status " + std::to_string(st) + ")";
      s.gpus.push_back(g);
      continue;
    }
    g.bus_id = bdf_to_bus_id(bdf);
    int64_t milli = 0;
    if (api.dev_temp_metric_get(dv, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CURRENT, &milli) == RSMI_STATUS_SUCCESS ||
        api.dev_temp_metric_get(dv, RSMI_TEMP_TYPE_EDGE, RSMI_TEMP_CURRENT, &milli) == RSMI_STATUS_SUCCESS)
      g.temperature_c = static_cast<int>(milli / 1000);
    if (api.dev_temp_metric_get(dv, RSMI_TEMP_TYPE_JUNCTION, RSMI_TEMP_CRITICAL, &milli) == RSMI_STATUS_SUCCESS)
      g.slowdown_c = static_cast<int>(milli / 1000);
    for (uint64_t block = RSMI_GPU_BLOCK_FIRST; block <= RSMI_GPU_BLOCK_LAST; block <<= 1) {
      rsmi_error_count_t ec{};
      if (api.dev_ecc_count_get(dv, static_cast<rsmi_gpu_block_t>(block), &ec) != RSMI_STATUS_SUCCESS) continue;
      g.ecc_correctable += static_cast<long long>(ec.correctable_err);
      g.ecc_uncorrectable += static_cast<long long>(ec.uncorrectable_err);
    }
    uint32_t pages = 0;
    if (api.dev_memory_reserved_pages_get(dv, &pages, nullptr) == RSMI_STATUS_SUCCESS && pages > 0) {
      std::vector<rsmi_retired_page_record_t> records(pages);
      if (api.dev_memory_reserved_pages_get(dv, &pages, records.data()) == RSMI_STATUS_SUCCESS) {
        records.resize(pages);
        for (const auto& r : records) {
          if (r.status == RSMI_MEM_PAGE_STATUS_PENDING) g.remap_pending = true;
          if (r.status == RSMI_MEM_PAGE_STATUS_UNRESERVABLE) g.remap_failed = true;
        }
      }
      g.retired_pages = static_cast<int>(pages);
    }
    uint64_t replay = 0;
    if (api.dev_pci_replay_counter_get(dv, &replay) == RSMI_STATUS_SUCCESS) g.pcie_replay = static_cast<long long>(replay);
    rsmi_xgmi_status_t xgmi = RSMI_XGMI_STATUS_NO_ERRORS;
    if (api.dev_xgmi_error_status(dv, &xgmi) == RSMI_STATUS_SUCCESS) g.xgmi_errors = xgmi == RSMI_XGMI_STATUS_NO_ERRORS ? 0 : 1;
    uint64_t bytes = 0;
    if (api.dev_memory_usage_get(dv, RSMI_MEM_TYPE_VRAM, &bytes) == RSMI_STATUS_SUCCESS)
      g.memory_used_mib = static_cast<long long>(bytes >> 20);
    if (api.dev_memory_total_get(dv, RSMI_MEM_TYPE_VRAM, &bytes) == RSMI_STATUS_SUCCESS)
      g.memory_total_mib = static_cast<long long>(bytes >> 20);
    uint32_t numa = 0;
    if (api.topo_numa_affinity_get(dv, &numa) == RSMI_STATUS_SUCCESS) g.numa_node = static_cast<int>(numa);
    read_pci_link(fs, g.bus_id, g);
    s.gpus.push_back(g);
  }
  uint32_t nprocs = 0;
  if (api.compute_process_info_get(nullptr, &nprocs) == RSMI_STATUS_SUCCESS && nprocs > 0) {
    std::vector<rsmi_process_info_t> procs(nprocs);
    if (api.compute_process_info_get(procs.data(), &nprocs) == RSMI_STATUS_SUCCESS) {
      procs.resize(nprocs);
      for (const auto& p : procs) {
        std::vector<uint32_t> devices(count ? count : 1);
        uint32_t ndev = static_cast<uint32_t>(devices.size());
        if (api.compute_process_gpus_get(p.process_id, devices.data(), &ndev) != RSMI_STATUS_SUCCESS) continue;
        for (uint32_t k = 0; k < ndev && k < devices.size(); ++k) {
          if (devices[k] >= s.gpus.size()) continue;
          // The library reports one VRAM figure per process; split it over the process's GPUs.
          s.gpus[devices[k]].processes.push_back(
              {static_cast<int>(p.process_id), static_cast<long long>((p.vram_usage >> 20) / (ndev ? ndev : 1)), ""});
        }
      }
    }
  }
  api.shut_down();
  return s;
}

GpuSnapshot RsmiBackend::collect() {
  auto api = load_rsmi_api();
  if (!api) {
    GpuSnapshot s;
    s.backend = "rsmi";
    s.ok = false;
    s.error = api.error();
    s.pci_gpu_count = count_pci_gpus(fs_);
    return s;
  }
  return collect_rsmi(*api, fs_);
}

}  // namespace safe
