// NVIDIA GPUs through NVML, loaded with dlopen("libnvidia-ml.so.1") at run time: no build
// dependency on NVIDIA packages. The few NVML types used are declared here from NVIDIA's public,
// ABI-stable nvml.h. NvmlApi is a table of the functions, so unit tests drive these code paths
// with a fake table where no NVIDIA GPU exists.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "healthcheck/gpu_backend.hpp"

namespace safe {

namespace nvml {
using Return = int;
struct DeviceOpaque;
using Device = DeviceOpaque*;
struct EventSetOpaque;
using EventSet = EventSetOpaque*;
inline constexpr Return kSuccess = 0;
inline constexpr Return kErrorNotSupported = 3;
inline constexpr Return kErrorInsufficientSize = 7;
inline constexpr Return kErrorInsufficientPower = 8;
inline constexpr Return kErrorTimeout = 10;
inline constexpr Return kErrorIrqIssue = 11;
inline constexpr Return kErrorGpuIsLost = 15;
inline constexpr unsigned kTemperatureGpu = 0;
inline constexpr unsigned kThresholdSlowdown = 1;
inline constexpr unsigned kMemoryErrorCorrected = 0;
inline constexpr unsigned kMemoryErrorUncorrected = 1;
inline constexpr unsigned kVolatileEcc = 0;
inline constexpr unsigned kPageRetirementSingleBit = 0;
inline constexpr unsigned kPageRetirementDoubleBit = 1;
inline constexpr unsigned kMaxNvLinks = 18;
inline constexpr unsigned long long kEventXidCritical = 0x8;

struct PciInfo {  // nvmlPciInfo_t (v3)
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};
struct Memory {  // nvmlMemory_t
  unsigned long long total, free, used;
};
// nvmlMemory_v2_t: says how much of the memory in use the driver and firmware reserve. v1's `used`
// counts that reservation (480 MiB on an idle H100 with driver 580, which read as stray GPU use on
// every idle node); nvml.h says v2's `used` includes it too.
struct MemoryV2 {
  unsigned version;
  unsigned long long total, reserved, free, used;
};
// NVML_STRUCT_VERSION(Memory, 2): the struct's size, and the version in the top byte.
inline constexpr unsigned kMemoryV2Version = static_cast<unsigned>(sizeof(MemoryV2)) | (2u << 24);
struct ProcessInfo {  // nvmlProcessInfo_t (v2/v3)
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id, compute_instance_id;
};
struct EventData {  // nvmlEventData_t
  Device device;
  unsigned long long event_type, event_data;
  unsigned gpu_instance_id, compute_instance_id;
};
}  // namespace nvml

struct NvmlApi {
  nvml::Return (*init)() = nullptr;  // nvmlInit_v2
  nvml::Return (*shutdown)() = nullptr;
  const char* (*error_string)(nvml::Return) = nullptr;
  nvml::Return (*device_count)(unsigned*) = nullptr;  // nvmlDeviceGetCount_v2
  nvml::Return (*handle_by_index)(unsigned, nvml::Device*) = nullptr;  // _v2
  nvml::Return (*pci_info)(nvml::Device, nvml::PciInfo*) = nullptr;  // nvmlDeviceGetPciInfo_v3
  nvml::Return (*temperature)(nvml::Device, unsigned, unsigned*) = nullptr;
  nvml::Return (*temperature_threshold)(nvml::Device, unsigned, unsigned*) = nullptr;
  nvml::Return (*total_ecc_errors)(nvml::Device, unsigned, unsigned, unsigned long long*) = nullptr;
  nvml::Return (*remapped_rows)(nvml::Device, unsigned*, unsigned*, unsigned*, unsigned*) = nullptr;  // optional
  nvml::Return (*retired_pages)(nvml::Device, unsigned, unsigned*, unsigned long long*) = nullptr;    // optional
  nvml::Return (*pcie_replay_counter)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*curr_link_gen)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*max_link_gen)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*curr_link_width)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*max_link_width)(nvml::Device, unsigned*) = nullptr;
  nvml::Return (*nvlink_state)(nvml::Device, unsigned, unsigned*) = nullptr;  // optional
  nvml::Return (*memory_info)(nvml::Device, nvml::Memory*) = nullptr;
  nvml::Return (*memory_info_v2)(nvml::Device, nvml::MemoryV2*) = nullptr;  // optional (drivers from R510)
  nvml::Return (*compute_processes)(nvml::Device, unsigned*, nvml::ProcessInfo*) = nullptr;  // _v3, optional
  nvml::Return (*event_set_create)(nvml::EventSet*) = nullptr;                                  // optional
  nvml::Return (*register_events)(nvml::Device, unsigned long long, nvml::EventSet) = nullptr;  // optional
  nvml::Return (*event_set_wait)(nvml::EventSet, nvml::EventData*, unsigned) = nullptr;         // _v2, optional
};

Result<NvmlApi> load_nvml_api();

GpuSnapshot collect_nvml(const NvmlApi& api, const NodeFs& fs);

// The --watch agent's XID listener: waits for NVML XID events and calls on_xid(gpu_index, xid)
// until should_stop() returns true. Returns an error when events are unavailable.
Status listen_for_xids(const NvmlApi& api, const std::function<void(int, unsigned long long)>& on_xid,
                       const std::function<bool()>& should_stop);

class NvmlBackend : public GpuBackend {
 public:
  explicit NvmlBackend(NodeFs fs) : fs_(std::move(fs)) {}
  std::string name() const override { return "nvml"; }
  GpuSnapshot collect() override;

 private:
  NodeFs fs_;
};

}  // namespace safe
