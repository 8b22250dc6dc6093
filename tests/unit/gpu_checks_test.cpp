// Every GPU check on both sides of its threshold, table-driven over a healthy snapshot with one
// field changed.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "healthcheck/gpu_checks.hpp"

namespace safe {
namespace {

struct GpuCase {
  const char* name;
  const char* check;
  std::function<void(GpuDevice&)> change;  // applied to gpu3
  CheckStatus expected;
  const char* detail_part;
  bool idle = true;
};

GpuQuery healthy(int count = 8) {
  GpuQuery q;
  q.outcome = GpuQuery::Outcome::ok;
  q.snapshot = healthy_sim_snapshot(count);
  return q;
}

const CheckResult& find(const std::vector<CheckResult>& results, const std::string& check) {
  for (const auto& r : results)
    if (r.check == check) return r;
  static CheckResult none{"<missing>", CheckStatus::unknown, Severity::warning, false, "missing"};
  return none;
}

class GpuCheckTest : public ::testing::TestWithParam<GpuCase> {};

TEST_P(GpuCheckTest, Threshold) {
  const GpuCase& c = GetParam();
  HealthConfig config;  // documented defaults
  GpuQuery q = healthy();
  c.change(q.snapshot.gpus[3]);
  GpuCheckScope scope;
  scope.node_idle = c.idle;
  auto results = evaluate_gpu_checks(q, config, scope);
  const CheckResult& r = find(results, c.check);
  EXPECT_EQ(r.status, c.expected) << c.name << ": " << r.detail;
  EXPECT_NE(r.detail.find(c.detail_part), std::string::npos) << c.name << ": " << r.detail;
  // Nothing else fails because of this one change.
  for (const auto& other : results)
    if (other.check != c.check) {
      EXPECT_NE(other.status, CheckStatus::fail) << c.name << ": " << other.check << " " << other.detail;
    }
}

const GpuCase kGpuCases[] = {
    {"responsive", "gpu_responsive", [](GpuDevice&) {}, CheckStatus::pass, ""},
    {"lost", "gpu_responsive", [](GpuDevice& g) { g.responsive = false, g.error = "GPU is lost"; }, CheckStatus::fail, "gpu3 lost: GPU is lost"},
    {"uncorrectable_at_limit", "ecc_uncorrectable", [](GpuDevice& g) { g.ecc_uncorrectable = 0; }, CheckStatus::pass, ""},
    {"uncorrectable_over", "ecc_uncorrectable", [](GpuDevice& g) { g.ecc_uncorrectable = 2; }, CheckStatus::fail, "gpu3 uncorrectable ECC=2"},
    {"correctable_at_limit", "ecc_correctable", [](GpuDevice& g) { g.ecc_correctable = 10000; }, CheckStatus::pass, ""},
    {"correctable_over", "ecc_correctable", [](GpuDevice& g) { g.ecc_correctable = 10001; }, CheckStatus::fail, "correctable ECC=10001 > 10000"},
    {"retired_at_limit", "retired_memory", [](GpuDevice& g) { g.retired_pages = 10; }, CheckStatus::pass, ""},
    {"retired_over", "retired_memory", [](GpuDevice& g) { g.retired_pages = 11; }, CheckStatus::fail, "retired pages=11 > 10"},
    {"remap_pending", "retired_memory", [](GpuDevice& g) { g.remap_pending = true; }, CheckStatus::fail, "remap pending"},
    {"remap_failed", "retired_memory", [](GpuDevice& g) { g.remap_failed = true; }, CheckStatus::fail, "remap failed"},
    {"replay_at_limit", "pcie_replay", [](GpuDevice& g) { g.pcie_replay = 1000; }, CheckStatus::pass, ""},
    {"replay_over", "pcie_replay", [](GpuDevice& g) { g.pcie_replay = 1001; }, CheckStatus::fail, "PCIe replays=1001"},
    {"temp_below_slowdown_margin", "temperature", [](GpuDevice& g) { g.temperature_c = 94; }, CheckStatus::pass, ""},
    {"temp_at_slowdown_margin", "temperature", [](GpuDevice& g) { g.temperature_c = 95; }, CheckStatus::fail, "temperature 95C >= 95C"},
    {"temp_no_slowdown_below_max", "temperature", [](GpuDevice& g) { g.slowdown_c = -1, g.temperature_c = 99; }, CheckStatus::pass, ""},
    {"temp_no_slowdown_at_max", "temperature", [](GpuDevice& g) { g.slowdown_c = -1, g.temperature_c = 100; }, CheckStatus::fail, ">= 100C"},
    {"temp_unknown", "temperature", [](GpuDevice& g) { g.temperature_c = -1; }, CheckStatus::pass, ""},
    {"xgmi_all_up", "xgmi", [](GpuDevice& g) { g.xgmi_links = 7; }, CheckStatus::pass, ""},
    {"xgmi_link_down", "xgmi", [](GpuDevice& g) { g.xgmi_links_inactive = 1; }, CheckStatus::fail, "1 of 7 XGMI/NVLink links down"},
    {"xgmi_error_status", "xgmi", [](GpuDevice& g) { g.xgmi_errors = 1; }, CheckStatus::fail, "errors=1"},
    {"link_full", "pcie_link", [](GpuDevice&) {}, CheckStatus::pass, ""},
    {"link_width_degraded", "pcie_link", [](GpuDevice& g) { g.link_width = 8; }, CheckStatus::fail, "x8 < x16"},
    {"link_gen_low_while_idle_is_power_saving", "pcie_link", [](GpuDevice& g) { g.link_gen = 1; }, CheckStatus::pass, ""},
    {"link_gen_low_while_busy", "pcie_link",
     [](GpuDevice& g) { g.link_gen = 3, g.processes.push_back({1, 100, "x"}), g.memory_used_mib = 100; }, CheckStatus::fail,
     "gen3 < gen5", false},
    {"stray_none", "stray_gpu_use", [](GpuDevice&) {}, CheckStatus::pass, ""},
    {"stray_memory_at_limit", "stray_gpu_use", [](GpuDevice& g) { g.memory_used_mib = 15; }, CheckStatus::pass, ""},
    {"stray_memory_over", "stray_gpu_use", [](GpuDevice& g) { g.memory_used_mib = 16; }, CheckStatus::fail, "16 MiB"},
    {"stray_process", "stray_gpu_use", [](GpuDevice& g) { g.processes.push_back({99, 1, "leak"}); }, CheckStatus::fail, "1 processes"},
    {"stray_skipped_when_busy", "stray_gpu_use", [](GpuDevice& g) { g.memory_used_mib = 9000; }, CheckStatus::pass, "skipped", false},
};

INSTANTIATE_TEST_SUITE_P(Checks, GpuCheckTest, ::testing::ValuesIn(kGpuCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuCount, ExpectedCountBothSides) {
  HealthConfig config;
  config.expected_gpus = 8;
  EXPECT_EQ(find(evaluate_gpu_checks(healthy(8), config, {}), "gpu_count").status, CheckStatus::pass);
  auto results = evaluate_gpu_checks(healthy(7), config, {});
  const CheckResult& r = find(results, "gpu_count");
  EXPECT_EQ(r.status, CheckStatus::fail);
  EXPECT_EQ(r.detail, "GPU count 7, expected 8");
  EXPECT_TRUE(r.urgent);
}

TEST(GpuCount, PciCrossCheck) {
  HealthConfig config;  // expected_gpus 0: only the PCI cross-check
  GpuQuery q = healthy(7);
  q.snapshot.pci_gpu_count = 8;
  EXPECT_EQ(find(evaluate_gpu_checks(q, config, {}), "gpu_count").detail, "GPU library sees 7 of 8 PCI GPUs");
  q.snapshot.pci_gpu_count = 7;
  EXPECT_EQ(find(evaluate_gpu_checks(q, config, {}), "gpu_count").status, CheckStatus::pass);
}

TEST(GpuQueryOutcome, TimeoutMakesEveryGpuCheckUnknown) {
  GpuQuery q;
  q.outcome = GpuQuery::Outcome::timed_out;
  HealthConfig config;
  config.expected_gpus = 8;
  auto results = evaluate_gpu_checks(q, config, {});
  EXPECT_EQ(results.size(), 10u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, CheckStatus::unknown) << r.check;
  }
}

TEST(GpuQueryOutcome, NoDriverFailsOnlyWhenGpusAreExpected) {
  GpuQuery q;
  q.outcome = GpuQuery::Outcome::no_backend;
  HealthConfig config;
  EXPECT_EQ(find(evaluate_gpu_checks(q, config, {}), "gpu_count").status, CheckStatus::pass);
  config.expected_gpus = 8;
  EXPECT_EQ(find(evaluate_gpu_checks(q, config, {}), "gpu_count").status, CheckStatus::fail);
}

TEST(GpuQueryOutcome, BrokenLibraryOnAGpuNodeFails) {
  GpuQuery q;
  q.outcome = GpuQuery::Outcome::ok;
  q.snapshot.backend = "nvml";
  q.snapshot.ok = false;
  q.snapshot.error = "nvmlInit failed: Driver Not Loaded";
  q.snapshot.pci_gpu_count = 8;
  auto results = evaluate_gpu_checks(q, HealthConfig{}, {});
  EXPECT_EQ(find(results, "gpu_count").status, CheckStatus::fail);
  EXPECT_NE(find(results, "gpu_count").detail.find("Driver Not Loaded"), std::string::npos);
  EXPECT_EQ(find(results, "ecc_uncorrectable").status, CheckStatus::unknown);
  q.snapshot.pci_gpu_count = 0;  // no GPUs on the bus: the library failing says nothing
  EXPECT_EQ(find(evaluate_gpu_checks(q, HealthConfig{}, {}), "gpu_count").status, CheckStatus::unknown);
}

TEST(GpuScope, OnlyTheJobsGpusCount) {
  GpuQuery q = healthy();
  q.snapshot.gpus[5].ecc_uncorrectable = 4;
  GpuCheckScope scope;
  scope.only_gpus = std::vector<int>{0, 1};
  EXPECT_EQ(find(evaluate_gpu_checks(q, HealthConfig{}, scope), "ecc_uncorrectable").status, CheckStatus::pass);
  scope.only_gpus = std::vector<int>{4, 5};
  EXPECT_EQ(find(evaluate_gpu_checks(q, HealthConfig{}, scope), "ecc_uncorrectable").detail, "gpu5 uncorrectable ECC=4");
  scope.only_gpus = std::vector<int>{9};
  EXPECT_EQ(find(evaluate_gpu_checks(q, HealthConfig{}, scope), "gpu_count").detail, "gpu9 missing");
}

TEST(GpuDetail, SeveralFailingGpusAreCounted) {
  GpuQuery q = healthy();
  q.snapshot.gpus[2].ecc_uncorrectable = 1;
  q.snapshot.gpus[6].ecc_uncorrectable = 3;
  EXPECT_EQ(find(evaluate_gpu_checks(q, HealthConfig{}, {}), "ecc_uncorrectable").detail, "gpu2 uncorrectable ECC=1 (+1 more)");
}

TEST(GpuDetail, ThresholdsComeFromConfig) {
  HealthConfig config;
  config.thresholds.ecc_correctable_max = 50'000'000;
  GpuQuery q = healthy();
  q.snapshot.gpus[0].ecc_correctable = 20'000'000;
  EXPECT_EQ(find(evaluate_gpu_checks(q, config, {}), "ecc_correctable").status, CheckStatus::pass);
  config.thresholds.ecc_correctable_max = 10'000'000;
  EXPECT_EQ(find(evaluate_gpu_checks(q, config, {}), "ecc_correctable").status, CheckStatus::fail);
}

}  // namespace
}  // namespace safe

namespace safe {
namespace {

// The GPU grid: the same checks, GPU by GPU (what the console's cluster page shows).
TEST(GpuGrid, NamesEachGpusFailedChecks) {
  HealthConfig config;
  GpuQuery q = healthy();
  q.snapshot.gpus[3].ecc_uncorrectable = 2;
  q.snapshot.gpus[3].temperature_c = 120;
  q.snapshot.gpus[5].responsive = false;
  q.snapshot.gpus[5].ecc_uncorrectable = 9;  // not judged: the GPU is lost
  GpuCheckScope scope;
  scope.node_idle = true;
  GpuGrid grid = gpu_grid(q, config, scope);
  EXPECT_TRUE(grid.unknown.empty());
  EXPECT_TRUE(grid.gpu_count.empty());
  ASSERT_EQ(grid.gpus.size(), 8u);
  EXPECT_NE(std::find(grid.checks.begin(), grid.checks.end(), "stray_gpu_use"), grid.checks.end()) << "the node is idle";
  for (const auto& g : grid.gpus) {
    std::vector<std::string> failed;
    for (const auto& [check, detail] : g.failed) failed.push_back(check);
    if (g.index == 3) {
      EXPECT_EQ(failed, (std::vector<std::string>{"ecc_uncorrectable", "temperature"}));
      EXPECT_NE(g.failed[0].second.find("gpu3 uncorrectable ECC=2"), std::string::npos) << g.failed[0].second;
    } else if (g.index == 5) {
      EXPECT_EQ(failed, (std::vector<std::string>{"gpu_responsive"}));
    } else {
      EXPECT_TRUE(failed.empty()) << "gpu" << g.index;
    }
  }
}

TEST(GpuGrid, LeavesOutDisabledChecksAndSaysWhyNothingWasJudged) {
  HealthConfig config;
  config.disabled_checks = {"temperature", "gpu_count"};
  GpuQuery q = healthy(7);
  config.expected_gpus = 8;
  q.snapshot.gpus[0].temperature_c = 120;
  GpuGrid grid = gpu_grid(q, config, GpuCheckScope{});
  EXPECT_EQ(std::find(grid.checks.begin(), grid.checks.end(), "temperature"), grid.checks.end());
  EXPECT_EQ(std::find(grid.checks.begin(), grid.checks.end(), "stray_gpu_use"), grid.checks.end()) << "node state unknown";
  EXPECT_TRUE(grid.gpus[0].failed.empty());
  EXPECT_TRUE(grid.gpu_count.empty()) << "gpu_count is disabled";
  config.disabled_checks.clear();
  EXPECT_NE(gpu_grid(q, config, GpuCheckScope{}).gpu_count.find("expected 8"), std::string::npos);

  GpuQuery timed_out;
  timed_out.outcome = GpuQuery::Outcome::timed_out;
  GpuGrid none = gpu_grid(timed_out, config, GpuCheckScope{});
  EXPECT_EQ(none.unknown, "GPU query timed out");
  EXPECT_TRUE(none.gpus.empty());
}

}  // namespace
}  // namespace safe
