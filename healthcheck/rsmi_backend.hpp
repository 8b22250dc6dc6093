// AMD GPUs through rocm-smi-lib. The library is loaded with dlopen at run time (only its header is
// a build dependency), so one safe-healthcheck binary runs on AMD, NVIDIA and GPU-less nodes.
// Collection goes through RsmiApi, a table of the library's functions, so unit tests drive these
// code paths with a fake table where no AMD GPU exists.
#pragma once

#include <rocm_smi/rocm_smi.h>

#include <optional>
#include <string>

#include "common/result.hpp"
#include "healthcheck/gpu_backend.hpp"

namespace safe {

struct RsmiApi {
  rsmi_status_t (*init)(uint64_t) = nullptr;
  rsmi_status_t (*shut_down)() = nullptr;
  rsmi_status_t (*num_monitor_devices)(uint32_t*) = nullptr;
  rsmi_status_t (*dev_pci_id_get)(uint32_t, uint64_t*) = nullptr;
  rsmi_status_t (*dev_temp_metric_get)(uint32_t, uint32_t, rsmi_temperature_metric_t, int64_t*) = nullptr;
  rsmi_status_t (*dev_ecc_count_get)(uint32_t, rsmi_gpu_block_t, rsmi_error_count_t*) = nullptr;
  rsmi_status_t (*dev_memory_reserved_pages_get)(uint32_t, uint32_t*, rsmi_retired_page_record_t*) = nullptr;
  rsmi_status_t (*dev_pci_replay_counter_get)(uint32_t, uint64_t*) = nullptr;
  rsmi_status_t (*dev_xgmi_error_status)(uint32_t, rsmi_xgmi_status_t*) = nullptr;
  rsmi_status_t (*dev_memory_usage_get)(uint32_t, rsmi_memory_type_t, uint64_t*) = nullptr;
  rsmi_status_t (*dev_memory_total_get)(uint32_t, rsmi_memory_type_t, uint64_t*) = nullptr;
  rsmi_status_t (*topo_numa_affinity_get)(uint32_t, uint32_t*) = nullptr;
  rsmi_status_t (*compute_process_info_get)(rsmi_process_info_t*, uint32_t*) = nullptr;
  rsmi_status_t (*compute_process_gpus_get)(uint32_t, uint32_t*, uint32_t*) = nullptr;
};

// dlopen("librocm_smi64.so.1"); nullopt (and `error`) when the library or a function is missing.
Result<RsmiApi> load_rsmi_api();

// The whole collection against a function table: the real library or a test fake. PCIe link
// state comes from sysfs (the library reports bandwidth, not the negotiated link).
GpuSnapshot collect_rsmi(const RsmiApi& api, const NodeFs& fs);

class RsmiBackend : public GpuBackend {
 public:
  explicit RsmiBackend(NodeFs fs) : fs_(std::move(fs)) {}
  std::string name() const override { return "rsmi"; }
  GpuSnapshot collect() override;

 private:
  NodeFs fs_;
};

}  // namespace safe
