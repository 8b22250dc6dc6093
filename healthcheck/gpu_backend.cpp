#include "healthcheck/gpu_backend.hpp"

#include <cstdlib>

#include "healthcheck/nvml_backend.hpp"
#include "healthcheck/rsmi_backend.hpp"
#include "healthcheck/sim_backend.hpp"

namespace safe {

std::optional<GpuBackendKind> detect_gpu_backend(const NodeFs& fs) {
  if (fs.exists("/dev/kfd") || fs.exists("/sys/module/amdgpu")) return GpuBackendKind::rsmi;
  if (fs.exists("/dev/nvidiactl") || fs.exists("/proc/driver/nvidia")) return GpuBackendKind::nvml;
  return std::nullopt;
}

std::unique_ptr<GpuBackend> make_gpu_backend(const HealthConfig& config, const NodeFs& fs, const std::string& node) {
  std::optional<GpuBackendKind> kind = config.backend;
  if (config.backend == GpuBackendKind::auto_detect) kind = detect_gpu_backend(fs);
  if (!kind) return nullptr;
  switch (*kind) {
    case GpuBackendKind::sim: return std::make_unique<SimBackend>(config.sim_dir, node, config.expected_gpus);
    case GpuBackendKind::rsmi: return std::make_unique<RsmiBackend>(fs);
    case GpuBackendKind::nvml: return std::make_unique<NvmlBackend>(fs);
    case GpuBackendKind::auto_detect: break;
  }
  return nullptr;
}

int count_pci_gpus(const NodeFs& fs) {
  if (!fs.exists("/sys/bus/pci/devices")) return -1;
  int count = 0;
  for (const auto& dev : fs.list("/sys/bus/pci/devices")) {
    std::string base = "/sys/bus/pci/devices/" + dev;
    auto vendor = fs.read_line(base + "/vendor");
    auto cls = fs.read_line(base + "/class");
    if (!vendor || !cls) continue;
    bool gpu_vendor = *vendor == "0x1002" || *vendor == "0x10de";
    // 0x0300 VGA, 0x0302 3D controller (NVIDIA data-centre), 0x0380 display (AMD Instinct).
    bool gpu_class = cls->rfind("0x0300", 0) == 0 || cls->rfind("0x0302", 0) == 0 || cls->rfind("0x0380", 0) == 0;
    if (gpu_vendor && gpu_class) ++count;
  }
  return count;
}

int pcie_generation_from_speed(const std::string& speed) {
  double gts = std::strtod(speed.c_str(), nullptr);
  if (gts >= 60) return 6;
  if (gts >= 30) return 5;
  if (gts >= 15) return 4;
  if (gts >= 7.5) return 3;
  if (gts >= 4.5) return 2;
  if (gts >= 2) return 1;
  return 0;
}

void read_pci_link(const NodeFs& fs, const std::string& bus_id, GpuDevice& d) {
  if (bus_id.empty()) return;
  std::string base = "/sys/bus/pci/devices/" + bus_id;
  if (auto v = fs.read_line(base + "/current_link_speed")) d.link_gen = pcie_generation_from_speed(*v);
  if (auto v = fs.read_line(base + "/max_link_speed")) d.link_max_gen = pcie_generation_from_speed(*v);
  if (auto v = fs.read_line(base + "/current_link_width")) d.link_width = std::atoi(v->c_str());
  if (auto v = fs.read_line(base + "/max_link_width")) d.link_max_width = std::atoi(v->c_str());
  if (d.numa_node < 0)
    if (auto v = fs.read_line(base + "/numa_node")) d.numa_node = std::atoi(v->c_str());
}

}  // namespace safe
