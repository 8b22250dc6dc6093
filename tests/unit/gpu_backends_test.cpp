// The rsmi and NVML collection code paths, driven by fake function tables: no AMD or NVIDIA GPU
// exists on the build machines, so these fakes stand in for the libraries (the real libraries
// are only exercised on GPU nodes). Also the sim backend, PCI counting and sysfs link parsing.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "common/sim_gpu_file.hpp"
#include "healthcheck/gpu_backend.hpp"
#include "healthcheck/nvml_backend.hpp"
#include "healthcheck/rsmi_backend.hpp"
#include "healthcheck/sim_backend.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

// ---- fake rocm-smi: two GPUs, the second with ECC errors, a pending page and an XGMI error ----
struct FakeRsmi {
  rsmi_status_t init = RSMI_STATUS_SUCCESS;
  uint32_t count = 2;
  bool pci_fails_on_1 = false;
  bool shut_down_called = false;
} g_rsmi;

rsmi_status_t rs_init(uint64_t) { return g_rsmi.init; }
rsmi_status_t rs_shut_down() { return g_rsmi.shut_down_called = true, RSMI_STATUS_SUCCESS; }
rsmi_status_t rs_count(uint32_t* n) { return *n = g_rsmi.count, RSMI_STATUS_SUCCESS; }
rsmi_status_t rs_pci(uint32_t dv, uint64_t* bdf) {
  if (dv == 1 && g_rsmi.pci_fails_on_1) return RSMI_STATUS_NOT_SUPPORTED;
  *bdf = (0xc1ULL + dv) << 8;  // 0000:c1:00.0, 0000:c2:00.0
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rs_temp(uint32_t dv, uint32_t sensor, rsmi_temperature_metric_t metric, int64_t* out) {
  if (sensor != RSMI_TEMP_TYPE_JUNCTION) return RSMI_STATUS_NOT_SUPPORTED;
  *out = metric == RSMI_TEMP_CRITICAL ? 105000 : (dv == 0 ? 50000 : 103000);
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rs_ecc(uint32_t dv, rsmi_gpu_block_t block, rsmi_error_count_t* ec) {
  if (block != RSMI_GPU_BLOCK_UMC && block != RSMI_GPU_BLOCK_XGMI_WAFL) return RSMI_STATUS_NOT_SUPPORTED;
  ec->correctable_err = dv == 1 ? 7 : 0;
  ec->uncorrectable_err = dv == 1 ? 1 : 0;
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rs_pages(uint32_t dv, uint32_t* n, rsmi_retired_page_record_t* records) {
  if (dv == 0) return *n = 0, RSMI_STATUS_SUCCESS;
  if (records) {
    records[0] = {0x1000, 4096, RSMI_MEM_PAGE_STATUS_RESERVED};
    records[1] = {0x2000, 4096, RSMI_MEM_PAGE_STATUS_PENDING};
  }
  *n = 2;
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rs_replay(uint32_t dv, uint64_t* v) { return *v = dv * 5, RSMI_STATUS_SUCCESS; }
rsmi_status_t rs_xgmi(uint32_t dv, rsmi_xgmi_status_t* s) {
  *s = dv == 1 ? RSMI_XGMI_STATUS_ERROR : RSMI_XGMI_STATUS_NO_ERRORS;
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rs_mem_used(uint32_t, rsmi_memory_type_t, uint64_t* b) { return *b = 64ULL << 20, RSMI_STATUS_SUCCESS; }
rsmi_status_t rs_mem_total(uint32_t, rsmi_memory_type_t, uint64_t* b) { return *b = 192ULL << 30, RSMI_STATUS_SUCCESS; }
rsmi_status_t rs_numa(uint32_t dv, uint32_t* n) { return *n = dv, RSMI_STATUS_SUCCESS; }
rsmi_status_t rs_procs(rsmi_process_info_t* procs, uint32_t* n) {
  if (procs) procs[0] = {4242, 0, 2048ULL << 20, 0, 0};
  *n = 1;
  return RSMI_STATUS_SUCCESS;
}
rsmi_status_t rs_proc_gpus(uint32_t, uint32_t* devs, uint32_t* n) {
  devs[0] = 0;
  devs[1] = 1;
  *n = 2;
  return RSMI_STATUS_SUCCESS;
}

RsmiApi fake_rsmi() {
  RsmiApi a;
  a.init = rs_init, a.shut_down = rs_shut_down, a.num_monitor_devices = rs_count, a.dev_pci_id_get = rs_pci;
  a.dev_temp_metric_get = rs_temp, a.dev_ecc_count_get = rs_ecc, a.dev_memory_reserved_pages_get = rs_pages;
  a.dev_pci_replay_counter_get = rs_replay, a.dev_xgmi_error_status = rs_xgmi, a.dev_memory_usage_get = rs_mem_used;
  a.dev_memory_total_get = rs_mem_total, a.topo_numa_affinity_get = rs_numa, a.compute_process_info_get = rs_procs;
  a.compute_process_gpus_get = rs_proc_gpus;
  return a;
}

TEST(RsmiBackend, CollectsThroughTheFunctionTable) {
  g_rsmi = FakeRsmi{};
  test::TempDir dir;
  NodeFs fs(test::copy_fixture(dir, "node-healthy"));  // sysfs for the two AMD GPUs' links
  GpuSnapshot s = collect_rsmi(fake_rsmi(), fs);
  ASSERT_TRUE(s.ok) << s.error;
  EXPECT_TRUE(g_rsmi.shut_down_called);
  EXPECT_EQ(s.backend, "rsmi");
  EXPECT_EQ(s.pci_gpu_count, 2);
  ASSERT_EQ(s.gpus.size(), 2u);
  const GpuDevice& a = s.gpus[0];
  const GpuDevice& b = s.gpus[1];
  EXPECT_EQ(a.bus_id, "0000:c1:00.0");
  EXPECT_EQ(b.bus_id, "0000:c2:00.0");
  EXPECT_EQ(a.temperature_c, 50);
  EXPECT_EQ(a.slowdown_c, 105);
  EXPECT_EQ(b.ecc_uncorrectable, 2);  // UMC + XGMI_WAFL blocks summed
  EXPECT_EQ(b.ecc_correctable, 14);
  EXPECT_EQ(b.retired_pages, 2);
  EXPECT_TRUE(b.remap_pending);
  EXPECT_FALSE(b.remap_failed);
  EXPECT_EQ(b.pcie_replay, 5);
  EXPECT_EQ(b.xgmi_errors, 1);
  EXPECT_EQ(a.memory_used_mib, 64);
  EXPECT_EQ(a.memory_total_mib, 192 * 1024);
  EXPECT_EQ(b.numa_node, 1);
  EXPECT_EQ(a.link_gen, 5);
  EXPECT_EQ(a.link_max_width, 16);
  ASSERT_EQ(a.processes.size(), 1u);
  EXPECT_EQ(a.processes[0].pid, 4242);
  EXPECT_EQ(a.processes[0].memory_mib, 1024);  // 2 GiB split over its two GPUs
}

TEST(RsmiBackend, InitFailureAndUnresponsiveDevice) {
  g_rsmi = FakeRsmi{};
  g_rsmi.init = RSMI_STATUS_INIT_ERROR;
  test::TempDir dir;
  GpuSnapshot s = collect_rsmi(fake_rsmi(), NodeFs(dir.path()));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find("rsmi_init failed"), std::string::npos);
  g_rsmi = FakeRsmi{};
  g_rsmi.pci_fails_on_1 = true;
  s = collect_rsmi(fake_rsmi(), NodeFs(dir.path()));
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_TRUE(s.gpus[0].responsive);
  EXPECT_FALSE(s.gpus[1].responsive);
  EXPECT_EQ(s.pci_gpu_count, -1);  // no sysfs in an empty root
}

// ---- fake NVML: three GPUs, the last one lost; GPU 1 with remapping and a down NVLink ----
struct FakeNvml {
  nvml::Return init = nvml::kSuccess;
  int xid_events = 0;
} g_nvml;

nvml::Device handle(unsigned i) { return reinterpret_cast<nvml::Device>(static_cast<std::uintptr_t>(0x100 + i)); }
unsigned index_of(nvml::Device d) { return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(d) - 0x100); }

nvml::Return nv_init() { return g_nvml.init; }
nvml::Return nv_shutdown() { return nvml::kSuccess; }
const char* nv_error(nvml::Return r) { return r == nvml::kErrorGpuIsLost ? "GPU is lost" : "Unknown Error"; }
nvml::Return nv_count(unsigned* n) { return *n = 3, nvml::kSuccess; }
nvml::Return nv_handle(unsigned i, nvml::Device* d) {
  if (i == 2) return nvml::kErrorGpuIsLost;
  *d = handle(i);
  return nvml::kSuccess;
}
nvml::Return nv_pci(nvml::Device d, nvml::PciInfo* p) {
  std::snprintf(p->bus_id, sizeof p->bus_id, "00000000:%02X:00.0", 0xC1 + index_of(d));
  return nvml::kSuccess;
}
nvml::Return nv_temp(nvml::Device, unsigned, unsigned* t) { return *t = 61, nvml::kSuccess; }
nvml::Return nv_threshold(nvml::Device, unsigned which, unsigned* t) {
  return which == nvml::kThresholdSlowdown ? (*t = 87, nvml::kSuccess) : nvml::kErrorNotSupported;
}
nvml::Return nv_ecc(nvml::Device d, unsigned type, unsigned, unsigned long long* c) {
  *c = type == nvml::kMemoryErrorUncorrected ? index_of(d) : 100;
  return nvml::kSuccess;
}
nvml::Return nv_remap(nvml::Device d, unsigned* corr, unsigned* unc, unsigned* pending, unsigned* failed) {
  *corr = index_of(d) * 2, *unc = index_of(d), *pending = index_of(d) == 1, *failed = 0;
  return nvml::kSuccess;
}
nvml::Return nv_replay(nvml::Device, unsigned* v) { return *v = 3, nvml::kSuccess; }
nvml::Return nv_gen(nvml::Device, unsigned* v) { return *v = 4, nvml::kSuccess; }
nvml::Return nv_width(nvml::Device d, unsigned* v) { return *v = index_of(d) == 1 ? 8 : 16, nvml::kSuccess; }
nvml::Return nv_max_width(nvml::Device, unsigned* v) { return *v = 16, nvml::kSuccess; }
nvml::Return nv_nvlink(nvml::Device d, unsigned link, unsigned* active) {
  if (link >= 12) return nvml::kErrorNotSupported;
  *active = !(index_of(d) == 1 && link == 5);
  return nvml::kSuccess;
}
nvml::Return nv_mem(nvml::Device, nvml::Memory* m) {
  m->total = 80ULL << 30, m->used = 5ULL << 20, m->free = m->total - m->used;
  return nvml::kSuccess;
}
// NVML from R510 on: v1's `used` counts the driver's reservation (480 MiB on an idle H100, seen
// with driver 580); v2 reports the reservation beside `used`, which nvml.h says includes it. v2
// refuses a struct of another version.
nvml::Return nv_mem_v1_with_reserved(nvml::Device, nvml::Memory* m) {
  m->total = 80ULL << 30, m->used = 480ULL << 20, m->free = m->total - m->used;
  return nvml::kSuccess;
}
nvml::Return nv_mem_v2(nvml::Device, nvml::MemoryV2* m) {
  if (m->version != ((40u) | (2u << 24))) return nvml::Return{3};  // NVML_ERROR_NOT_SUPPORTED-like
  m->total = 80ULL << 30, m->reserved = 480ULL << 20, m->used = m->reserved + (2ULL << 20);
  m->free = m->total - m->used;
  return nvml::kSuccess;
}
nvml::Return nv_procs(nvml::Device d, unsigned* n, nvml::ProcessInfo* p) {
  if (index_of(d) != 0) return *n = 0, nvml::kSuccess;
  if (!p) return *n = 1, nvml::kErrorInsufficientSize;
  p[0] = {777, 300ULL << 20, 0, 0};
  *n = 1;
  return nvml::kSuccess;
}
nvml::Return nv_event_create(nvml::EventSet* s) { return *s = nullptr, nvml::kSuccess; }
nvml::Return nv_register(nvml::Device, unsigned long long, nvml::EventSet) { return nvml::kSuccess; }
nvml::Return nv_wait(nvml::EventSet, nvml::EventData* data, unsigned) {
  if (g_nvml.xid_events++ == 0) return nvml::kErrorTimeout;
  data->device = handle(1);
  data->event_type = nvml::kEventXidCritical;
  data->event_data = 79;
  return nvml::kSuccess;
}

NvmlApi fake_nvml() {
  NvmlApi a;
  a.init = nv_init, a.shutdown = nv_shutdown, a.error_string = nv_error, a.device_count = nv_count;
  a.handle_by_index = nv_handle, a.pci_info = nv_pci, a.temperature = nv_temp, a.temperature_threshold = nv_threshold;
  a.total_ecc_errors = nv_ecc, a.remapped_rows = nv_remap, a.pcie_replay_counter = nv_replay;
  a.curr_link_gen = nv_gen, a.max_link_gen = nv_gen, a.curr_link_width = nv_width, a.max_link_width = nv_max_width;
  a.nvlink_state = nv_nvlink, a.memory_info = nv_mem, a.compute_processes = nv_procs;
  a.event_set_create = nv_event_create, a.register_events = nv_register, a.event_set_wait = nv_wait;
  return a;
}

TEST(NvmlBackend, CollectsThroughTheFunctionTable) {
  g_nvml = FakeNvml{};
  test::TempDir dir;
  GpuSnapshot s = collect_nvml(fake_nvml(), NodeFs(dir.path()));
  ASSERT_TRUE(s.ok) << s.error;
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_EQ(s.gpus[0].bus_id, "0000:c1:00.0");
  EXPECT_EQ(s.gpus[0].temperature_c, 61);
  EXPECT_EQ(s.gpus[0].slowdown_c, 87);
  EXPECT_EQ(s.gpus[0].ecc_correctable, 100);
  EXPECT_EQ(s.gpus[1].ecc_uncorrectable, 1);
  EXPECT_TRUE(s.gpus[1].remap_pending);
  EXPECT_EQ(s.gpus[1].retired_pages, 3);
  EXPECT_EQ(s.gpus[1].link_width, 8);
  EXPECT_EQ(s.gpus[1].xgmi_links, 12);
  EXPECT_EQ(s.gpus[1].xgmi_links_inactive, 1);
  EXPECT_EQ(s.gpus[0].memory_used_mib, 5);
  ASSERT_EQ(s.gpus[0].processes.size(), 1u);
  EXPECT_EQ(s.gpus[0].processes[0].pid, 777);
  EXPECT_EQ(s.gpus[0].processes[0].memory_mib, 300);
  EXPECT_FALSE(s.gpus[2].responsive);
  EXPECT_EQ(s.gpus[2].error, "GPU is lost");
}

TEST(NvmlBackend, MemoryInUseLeavesOutTheDriversReservation) {
  g_nvml = FakeNvml{};
  test::TempDir dir;
  NvmlApi api = fake_nvml();
  api.memory_info = nv_mem_v1_with_reserved;
  EXPECT_EQ(collect_nvml(api, NodeFs(dir.path())).gpus[0].memory_used_mib, 480) << "v1 alone: as the driver says";
  api.memory_info_v2 = nv_mem_v2;
  GpuSnapshot s = collect_nvml(api, NodeFs(dir.path()));
  EXPECT_EQ(s.gpus[0].memory_used_mib, 2);
  EXPECT_EQ(s.gpus[0].memory_total_mib, 80 * 1024);
  // A driver whose v2 `used` leaves the reservation out: taken as it is.
  api.memory_info_v2 = [](nvml::Device, nvml::MemoryV2* m) {
    m->total = 80ULL << 30, m->reserved = 480ULL << 20, m->used = 3ULL << 20, m->free = m->total - m->used;
    return nvml::kSuccess;
  };
  EXPECT_EQ(collect_nvml(api, NodeFs(dir.path())).gpus[0].memory_used_mib, 3);
}

TEST(NvmlBackend, InitFailure) {
  g_nvml = FakeNvml{};
  g_nvml.init = 9;  // DRIVER_NOT_LOADED
  test::TempDir dir;
  GpuSnapshot s = collect_nvml(fake_nvml(), NodeFs(dir.path()));
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.error.find("nvmlInit failed"), std::string::npos);
}

TEST(NvmlBackend, XidListenerReportsEvents) {
  g_nvml = FakeNvml{};
  std::vector<std::pair<int, unsigned long long>> seen;
  Status listened = listen_for_xids(
      fake_nvml(), [&](int gpu, unsigned long long xid) { seen.emplace_back(gpu, xid); }, [&] { return !seen.empty(); });
  EXPECT_TRUE(listened.ok()) << listened.error();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].first, 1);
  EXPECT_EQ(seen[0].second, 79u);
  NvmlApi no_events = fake_nvml();
  no_events.event_set_wait = nullptr;
  EXPECT_EQ("NVML events not available", listen_for_xids(no_events, [](int, unsigned long long) {}, [] { return true; }).error());
}

TEST(RealLibraries, AbsentNvmlIsReportedNotCrashed) {
  // On machines without the NVIDIA driver (like CI) the dlopen fails cleanly.
  auto api = load_nvml_api();
  if (api) GTEST_SKIP() << "libnvidia-ml is installed here";
  EXPECT_NE(api.error().find("libnvidia-ml.so.1"), std::string::npos);
}

TEST(RealLibraries, RocmSmiBindsEveryFunction) {
  // librocm-smi is a build dependency, so its library is normally here: every symbol must bind
  // (init is not called: it needs an AMD GPU).
  auto api = load_rsmi_api();
  if (!api && api.error().find("cannot load") != std::string::npos) GTEST_SKIP() << api.error();
  ASSERT_TRUE(api) << api.error();
  EXPECT_NE(api->compute_process_gpus_get, nullptr);
}

TEST(SimBackend, ReadsTheNodeFileOrDefaults) {
  test::TempDir dir;
  SimBackend fresh(dir.path(), "n1", 4);
  GpuSnapshot s = fresh.collect();
  EXPECT_TRUE(s.ok);
  EXPECT_EQ(s.gpus.size(), 4u);
  GpuSnapshot edited = healthy_sim_snapshot(4);
  ASSERT_TRUE(apply_sim_fault(edited, 2, SimFault::ecc).ok());
  Status saved = save_sim_file(sim_file_path(dir.path(), "n1"), edited);
  ASSERT_TRUE(saved) << saved.error();
  EXPECT_EQ(SimBackend(dir.path(), "n1", 4).collect().gpus[2].ecc_uncorrectable, 2);
  EXPECT_EQ(SimBackend(dir.path(), "n2", 4).collect().gpus[2].ecc_uncorrectable, 0);  // another node's file
  std::FILE* f = std::fopen(sim_file_path(dir.path(), "n3").c_str(), "w");
  std::fputs("{broken", f);
  std::fclose(f);
  GpuSnapshot broken = SimBackend(dir.path(), "n3", 4).collect();
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.error.find("n3.json"), std::string::npos);
}

TEST(PciSysfs, CountsGpusAndReadsLinks) {
  test::TempDir dir;
  NodeFs healthy(test::copy_fixture(dir, "node-healthy"));
  NodeFs faulty(test::copy_fixture(dir, "node-faulty"));
  EXPECT_EQ(count_pci_gpus(healthy), 2);  // the Intel bridge is not a GPU
  EXPECT_EQ(count_pci_gpus(faulty), 1);
  EXPECT_EQ(count_pci_gpus(NodeFs(dir.path())), -1);
  GpuDevice d;
  read_pci_link(faulty, "0000:c1:00.0", d);
  EXPECT_EQ(d.link_gen, 3);
  EXPECT_EQ(d.link_max_gen, 4);
  EXPECT_EQ(d.link_width, 8);
  EXPECT_EQ(d.link_max_width, 16);
  EXPECT_EQ(d.numa_node, 1);
}

TEST(PciSysfs, GenerationFromSpeed) {
  EXPECT_EQ(pcie_generation_from_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_generation_from_speed("5.0 GT/s"), 2);
  EXPECT_EQ(pcie_generation_from_speed("8.0 GT/s PCIe"), 3);
  EXPECT_EQ(pcie_generation_from_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_generation_from_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_generation_from_speed("64.0 GT/s PCIe"), 6);
  EXPECT_EQ(pcie_generation_from_speed("Unknown"), 0);
}

TEST(BackendDetection, ByDriverPresence) {
  test::TempDir dir;
  NodeFs fs(dir.path());
  EXPECT_FALSE(detect_gpu_backend(fs).has_value());
  std::filesystem::create_directories(dir.path() + "/proc/driver/nvidia");
  EXPECT_EQ(detect_gpu_backend(fs), GpuBackendKind::nvml);
  std::filesystem::create_directories(dir.path() + "/sys/module/amdgpu");
  EXPECT_EQ(detect_gpu_backend(fs), GpuBackendKind::rsmi);
}

}  // namespace
}  // namespace safe
