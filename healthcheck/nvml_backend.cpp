#include "healthcheck/nvml_backend.hpp"

#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <vector>

namespace safe {
namespace {

template <class F>
bool bind(void* lib, const char* symbol, F& out, std::string& error, bool required = true) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!out && required) error = std::string("libnvidia-ml: missing ") + symbol;
  return out != nullptr || !required;
}

std::string describe(const NvmlApi& api, nvml::Return r) {
  const char* text = api.error_string ? api.error_string(r) : nullptr;
  return text ? std::string(text) : "NVML error " + std::to_string(r);
}

// NVML prints "00000000:C1:00.0"; sysfs and rocm-smi use "0000:c1:00.0".
std::string normalize_bus_id(const char* raw) {
  std::string id(raw);
  for (auto& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  return id;
}

}  // namespace

Result<NvmlApi> load_nvml_api() {
  void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return Error{std::string("cannot load libnvidia-ml.so.1: ") + dlerror()};
  NvmlApi a;
  std::string error;
  bool ok = bind(lib, "nvmlInit_v2", a.init, error) && bind(lib, "nvmlShutdown", a.shutdown, error) &&
            bind(lib, "nvmlErrorString", a.error_string, error) &&
            bind(lib, "nvmlDeviceGetCount_v2", a.device_count, error) &&
            bind(lib, "nvmlDeviceGetHandleByIndex_v2", a.handle_by_index, error) &&
            bind(lib, "nvmlDeviceGetPciInfo_v3", a.pci_info, error) &&
            bind(lib, "nvmlDeviceGetTemperature", a.temperature, error) &&
            bind(lib, "nvmlDeviceGetTemperatureThreshold", a.temperature_threshold, error) &&
            bind(lib, "nvmlDeviceGetTotalEccErrors", a.total_ecc_errors, error) &&
            bind(lib, "nvmlDeviceGetRemappedRows", a.remapped_rows, error, false) &&
            bind(lib, "nvmlDeviceGetRetiredPages", a.retired_pages, error, false) &&
            bind(lib, "nvmlDeviceGetPcieReplayCounter", a.pcie_replay_counter, error) &&
            bind(lib, "nvmlDeviceGetCurrPcieLinkGeneration", a.curr_link_gen, error) &&
            bind(lib, "nvmlDeviceGetMaxPcieLinkGeneration", a.max_link_gen, error) &&
            bind(lib, "nvmlDeviceGetCurrPcieLinkWidth", a.curr_link_width, error) &&
            bind(lib, "nvmlDeviceGetMaxPcieLinkWidth", a.max_link_width, error) &&
            bind(lib, "nvmlDeviceGetNvLinkState", a.nvlink_state, error, false) &&
            bind(lib, "nvmlDeviceGetMemoryInfo", a.memory_info, error) &&
            bind(lib, "nvmlDeviceGetMemoryInfo_v2", a.memory_info_v2, error, false) &&
            bind(lib, "nvmlDeviceGetComputeRunningProcesses_v3", a.compute_processes, error, false) &&
            bind(lib, "nvmlEventSetCreate", a.event_set_create, error, false) &&
            bind(lib, "nvmlDeviceRegisterEvents", a.register_events, error, false) &&
            bind(lib, "nvmlEventSetWait_v2", a.event_set_wait, error, false);
  if (!ok) return Error{error};
  return a;
}

GpuSnapshot collect_nvml(const NvmlApi& api, const NodeFs& fs) {
  GpuSnapshot s;
  s.backend = "nvml";
  s.pci_gpu_count = count_pci_gpus(fs);
  if (nvml::Return r = api.init(); r != nvml::kSuccess) {
    s.ok = false;
    s.error = "nvmlInit failed: " + describe(api, r);
    return s;
  }
  unsigned count = 0;
  if (nvml::Return r = api.device_count(&count); r != nvml::kSuccess) {
    s.ok = false;
    s.error = "nvmlDeviceGetCount failed: " + describe(api, r);
    api.shutdown();
    return s;
  }
  for (unsigned i = 0; i < count; ++i) {
    GpuDevice g;
    g.index = static_cast<int>(i);
    nvml::Device dev = nullptr;
    if (nvml::Return r = api.handle_by_index(i, &dev); r != nvml::kSuccess) {
      // GPU_IS_LOST, IRQ_ISSUE, INSUFFICIENT_POWER, ...: the device does not answer.
      g.responsive = false;
      g.error = describe(api, r);
      s.gpus.push_back(g);
      continue;
    }
    nvml::PciInfo pci{};
    if (api.pci_info(dev, &pci) == nvml::kSuccess) g.bus_id = normalize_bus_id(pci.bus_id);
    unsigned value = 0;
    if (nvml::Return r = api.temperature(dev, nvml::kTemperatureGpu, &value); r == nvml::kSuccess) {
      g.temperature_c = static_cast<int>(value);
    } else if (r == nvml::kErrorGpuIsLost) {
      g.responsive = false;
      g.error = describe(api, r);
    }
    if (api.temperature_threshold(dev, nvml::kThresholdSlowdown, &value) == nvml::kSuccess)
      g.slowdown_c = static_cast<int>(value);
    unsigned long long ecc = 0;
    if (api.total_ecc_errors(dev, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &ecc) == nvml::kSuccess)
      g.ecc_uncorrectable = static_cast<long long>(ecc);
    if (api.total_ecc_errors(dev, nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, &ecc) == nvml::kSuccess)
      g.ecc_correctable = static_cast<long long>(ecc);
    unsigned corr = 0, unc = 0, pending = 0, failure = 0;
    if (api.remapped_rows && api.remapped_rows(dev, &corr, &unc, &pending, &failure) == nvml::kSuccess) {
      g.remap_pending = pending != 0;
      g.remap_failed = failure != 0;
      g.retired_pages = static_cast<int>(corr + unc);
    } else if (api.retired_pages) {  // pre-Ampere: page retirement instead of row remapping
      for (unsigned cause : {nvml::kPageRetirementSingleBit, nvml::kPageRetirementDoubleBit}) {
        unsigned pages = 0;
        nvml::Return r = api.retired_pages(dev, cause, &pages, nullptr);
        if (r == nvml::kSuccess || r == nvml::kErrorInsufficientSize) g.retired_pages += static_cast<int>(pages);
      }
    }
    if (api.pcie_replay_counter(dev, &value) == nvml::kSuccess) g.pcie_replay = value;
    if (api.curr_link_gen(dev, &value) == nvml::kSuccess) g.link_gen = static_cast<int>(value);
    if (api.max_link_gen(dev, &value) == nvml::kSuccess) g.link_max_gen = static_cast<int>(value);
    if (api.curr_link_width(dev, &value) == nvml::kSuccess) g.link_width = static_cast<int>(value);
    if (api.max_link_width(dev, &value) == nvml::kSuccess) g.link_max_width = static_cast<int>(value);
    if (api.nvlink_state) {
      for (unsigned link = 0; link < nvml::kMaxNvLinks; ++link) {
        unsigned active = 0;
        if (api.nvlink_state(dev, link, &active) != nvml::kSuccess) continue;
        ++g.xgmi_links;
        if (!active) ++g.xgmi_links_inactive;
      }
    }
    nvml::MemoryV2 mem2{};
    mem2.version = nvml::kMemoryV2Version;
    nvml::Memory mem{};
    if (api.memory_info_v2 && api.memory_info_v2(dev, &mem2) == nvml::kSuccess) {
      // What processes allocated: without the reservation (nvml.h: `used` includes it; a driver
      // that left it out reports less in use than reserved, taken as it is).
      unsigned long long allocated = mem2.used >= mem2.reserved ? mem2.used - mem2.reserved : mem2.used;
      g.memory_used_mib = static_cast<long long>(allocated >> 20);
      g.memory_total_mib = static_cast<long long>(mem2.total >> 20);
    } else if (api.memory_info(dev, &mem) == nvml::kSuccess) {
      g.memory_used_mib = static_cast<long long>(mem.used >> 20);
      g.memory_total_mib = static_cast<long long>(mem.total >> 20);
    }
    if (api.compute_processes) {
      unsigned n = 0;
      nvml::Return r = api.compute_processes(dev, &n, nullptr);
      if ((r == nvml::kSuccess || r == nvml::kErrorInsufficientSize) && n > 0) {
        std::vector<nvml::ProcessInfo> procs(n + 4);  // room for processes that start meanwhile
        n = static_cast<unsigned>(procs.size());
        if (api.compute_processes(dev, &n, procs.data()) == nvml::kSuccess)
          for (unsigned k = 0; k < n; ++k)
            g.processes.push_back({static_cast<int>(procs[k].pid), static_cast<long long>(procs[k].used_gpu_memory >> 20), ""});
      }
    }
    if (!g.bus_id.empty() && fs.exists("/sys/bus/pci/devices/" + g.bus_id)) {
      std::string numa_file = "/sys/bus/pci/devices/" + g.bus_id + "/numa_node";
      if (auto v = fs.read_line(numa_file)) g.numa_node = std::atoi(v->c_str());
    }
    s.gpus.push_back(g);
  }
  api.shutdown();
  return s;
}

Status listen_for_xids(const NvmlApi& api, const std::function<void(int, unsigned long long)>& on_xid,
                       const std::function<bool()>& should_stop) {
  if (!api.event_set_create || !api.register_events || !api.event_set_wait) return Error{"NVML events not available"};
  if (nvml::Return r = api.init(); r != nvml::kSuccess) return Error{"nvmlInit failed: " + describe(api, r)};
  nvml::EventSet set = nullptr;
  if (nvml::Return r = api.event_set_create(&set); r != nvml::kSuccess) {
    api.shutdown();
    return Error{"nvmlEventSetCreate failed: " + describe(api, r)};
  }
  unsigned count = 0;
  api.device_count(&count);
  std::vector<nvml::Device> devices;
  for (unsigned i = 0; i < count; ++i) {
    nvml::Device dev = nullptr;
    if (api.handle_by_index(i, &dev) != nvml::kSuccess) continue;
    devices.push_back(dev);
    api.register_events(dev, nvml::kEventXidCritical, set);
  }
  while (!should_stop()) {
    nvml::EventData data{};
    nvml::Return r = api.event_set_wait(set, &data, 1000);
    if (r == nvml::kErrorTimeout) continue;
    if (r != nvml::kSuccess) break;
    if (!(data.event_type & nvml::kEventXidCritical)) continue;
    int index = -1;
    for (std::size_t k = 0; k < devices.size(); ++k)
      if (devices[k] == data.device) index = static_cast<int>(k);
    on_xid(index, data.event_data);
  }
  api.shutdown();
  return ok_status();
}

GpuSnapshot NvmlBackend::collect() {
  auto api = load_nvml_api();
  if (!api) {
    GpuSnapshot s;
    s.backend = "nvml";
    s.ok = false;
    s.error = api.error();
    s.pci_gpu_count = count_pci_gpus(fs_);
    return s;
  }
  return collect_nvml(*api, fs_);
}

}  // namespace safe
