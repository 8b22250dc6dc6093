#include "healthcheck/gpu_checks.hpp"

#include <algorithm>
#include <functional>

namespace safe {
namespace {

using Detail = std::optional<std::string>;  // a failure's detail, or nullopt when the GPU passes

struct GpuCheck {
  const char* name;
  Severity severity;
  bool urgent;
  std::function<Detail(const GpuDevice&)> test;
};

std::string gpu(const GpuDevice& g) { return "gpu" + std::to_string(g.index); }

bool busy(const GpuDevice& g, const HealthThresholds& t) {
  return !g.processes.empty() || g.memory_used_mib > t.stray_gpu_memory_mib;
}

std::vector<GpuCheck> per_gpu_checks(const HealthConfig& config, const GpuCheckScope& scope) {
  const HealthThresholds& t = config.thresholds;
  std::vector<GpuCheck> checks = {
      {"gpu_responsive", Severity::critical, true,
       [](const GpuDevice& g) -> Detail {
         if (g.responsive) return std::nullopt;
         return gpu(g) + " lost" + (g.error.empty() ? "" : ": " + g.error);
       }},
      {"ecc_uncorrectable", Severity::critical, true,
       [&t](const GpuDevice& g) -> Detail {
         if (g.ecc_uncorrectable <= t.ecc_uncorrectable_max) return std::nullopt;
         return gpu(g) + " uncorrectable ECC=" + std::to_string(g.ecc_uncorrectable);
       }},
      {"ecc_correctable", Severity::warning, false,
       [&t](const GpuDevice& g) -> Detail {
         if (g.ecc_correctable <= t.ecc_correctable_max) return std::nullopt;
         return gpu(g) + " correctable ECC=" + std::to_string(g.ecc_correctable) + " > " +
                std::to_string(t.ecc_correctable_max);
       }},
      {"retired_memory", Severity::critical, false,
       [&t](const GpuDevice& g) -> Detail {
         if (g.remap_failed) return gpu(g) + " memory remap failed";
         if (g.remap_pending) return gpu(g) + " memory remap pending (reset needed)";
         if (g.retired_pages > t.retired_pages_max)
           return gpu(g) + " retired pages=" + std::to_string(g.retired_pages) + " > " + std::to_string(t.retired_pages_max);
         return std::nullopt;
       }},
      {"pcie_replay", Severity::warning, false,
       [&t](const GpuDevice& g) -> Detail {
         if (g.pcie_replay <= t.pcie_replay_max) return std::nullopt;
         return gpu(g) + " PCIe replays=" + std::to_string(g.pcie_replay) + " > " + std::to_string(t.pcie_replay_max);
       }},
      {"temperature", Severity::critical, false,
       [&t](const GpuDevice& g) -> Detail {
         if (g.temperature_c < 0) return std::nullopt;
         int limit = g.slowdown_c > 0 ? g.slowdown_c - t.temperature_margin_c : t.temperature_max_c;
         if (g.temperature_c < limit) return std::nullopt;
         return gpu(g) + " temperature " + std::to_string(g.temperature_c) + "C >= " + std::to_string(limit) + "C";
       }},
      {"xgmi", Severity::critical, false,
       [](const GpuDevice& g) -> Detail {
         if (g.xgmi_links_inactive > 0)
           return gpu(g) + " " + std::to_string(g.xgmi_links_inactive) + " of " + std::to_string(g.xgmi_links) +
                  " XGMI/NVLink links down";
         if (g.xgmi_errors != 0) return gpu(g) + " XGMI/NVLink errors=" + std::to_string(g.xgmi_errors);
         return std::nullopt;
       }},
      {"pcie_link", Severity::critical, false,
       [&t](const GpuDevice& g) -> Detail {
         if (g.link_max_width > 0 && g.link_width > 0 && g.link_width < g.link_max_width)
           return gpu(g) + " PCIe link x" + std::to_string(g.link_width) + " < x" + std::to_string(g.link_max_width);
         // Idle GPUs lower the link speed to save power: only a busy GPU's speed means anything.
         if (busy(g, t) && g.link_max_gen > 0 && g.link_gen > 0 && g.link_gen < g.link_max_gen)
           return gpu(g) + " PCIe link gen" + std::to_string(g.link_gen) + " < gen" + std::to_string(g.link_max_gen);
         return std::nullopt;
       }},
  };
  if (scope.node_idle.value_or(false) || scope.only_gpus) {
    checks.push_back({"stray_gpu_use", Severity::warning, false, [&t](const GpuDevice& g) -> Detail {
                        if (!busy(g, t)) return std::nullopt;
                        return gpu(g) + " in use while idle: " + std::to_string(g.processes.size()) + " processes, " +
                               std::to_string(g.memory_used_mib) + " MiB";
                      }});
  }
  return checks;
}

const char* const kGpuCheckNames[] = {"gpu_count", "gpu_responsive", "ecc_uncorrectable", "ecc_correctable",
                                      "retired_memory", "pcie_replay", "temperature", "xgmi", "pcie_link",
                                      "stray_gpu_use"};

Severity severity_of(std::string_view name) {
  return name == "ecc_correctable" || name == "pcie_replay" || name == "stray_gpu_use" ? Severity::warning
                                                                                       : Severity::critical;
}
bool urgent(std::string_view name) {
  return name == "gpu_count" || name == "gpu_responsive" || name == "ecc_uncorrectable";
}

}  // namespace

std::vector<CheckResult> evaluate_gpu_checks(const GpuQuery& query, const HealthConfig& config, const GpuCheckScope& scope) {
  std::vector<CheckResult> results;
  auto all_unknown = [&](const std::string& why, const char* except = nullptr) {
    for (const char* name : kGpuCheckNames)
      if (!except || std::string_view(name) != except)
        results.push_back(unknown(name, severity_of(name), urgent(name), why));
  };
  switch (query.outcome) {
    case GpuQuery::Outcome::timed_out:
      all_unknown("GPU query timed out" + (query.detail.empty() ? "" : ": " + query.detail));
      return results;
    case GpuQuery::Outcome::failed:
      all_unknown("GPU query failed: " + query.detail);
      return results;
    case GpuQuery::Outcome::no_backend:
      if (config.expected_gpus > 0 && !scope.only_gpus)
        results.push_back(failed("gpu_count", Severity::critical, true,
                                 "no GPU driver found, expected " + std::to_string(config.expected_gpus) + " GPUs"));
      else if (scope.only_gpus && !scope.only_gpus->empty())
        results.push_back(failed("gpu_count", Severity::critical, true, "no GPU driver found for the job's GPUs"));
      else
        results.push_back(passed("gpu_count", Severity::critical, true, "no GPUs"));
      return results;
    case GpuQuery::Outcome::ok: break;
  }
  const GpuSnapshot& s = query.snapshot;
  if (!s.ok) {
    // The library itself is broken: on a node that should have GPUs that is a lost node.
    bool should_have_gpus = config.expected_gpus > 0 || s.pci_gpu_count > 0 || (scope.only_gpus && !scope.only_gpus->empty());
    if (should_have_gpus)
      results.push_back(failed("gpu_count", Severity::critical, true, s.backend + " unusable: " + s.error));
    else
      results.push_back(unknown("gpu_count", Severity::critical, true, s.backend + " unusable: " + s.error));
    all_unknown(s.backend + " unusable: " + s.error, "gpu_count");
    return results;
  }

  // gpu_count
  {
    std::vector<std::string> problems;
    if (scope.only_gpus) {
      for (int want : *scope.only_gpus)
        if (std::none_of(s.gpus.begin(), s.gpus.end(), [&](const GpuDevice& g) { return g.index == want; }))
          problems.push_back("gpu" + std::to_string(want) + " missing");
    } else {
      int count = static_cast<int>(s.gpus.size());
      if (config.expected_gpus > 0 && count != config.expected_gpus)
        problems.push_back("GPU count " + std::to_string(count) + ", expected " + std::to_string(config.expected_gpus));
      else if (s.pci_gpu_count >= 0 && s.pci_gpu_count != count)
        problems.push_back("GPU library sees " + std::to_string(count) + " of " + std::to_string(s.pci_gpu_count) +
                           " PCI GPUs");
    }
    results.push_back(problems.empty() ? passed("gpu_count", Severity::critical, true,
                                                std::to_string(s.gpus.size()) + " GPUs")
                                       : failed("gpu_count", Severity::critical, true, summarize_failures(problems)));
  }

  std::vector<const GpuDevice*> devices;
  for (const auto& g : s.gpus)
    if (!scope.only_gpus || std::count(scope.only_gpus->begin(), scope.only_gpus->end(), g.index))
      devices.push_back(&g);

  for (const GpuCheck& check : per_gpu_checks(config, scope)) {
    std::vector<std::string> problems;
    for (const GpuDevice* g : devices) {
      // An unresponsive GPU reports nothing else worth judging.
      if (!g->responsive && std::string_view(check.name) != "gpu_responsive") continue;
      if (auto problem = check.test(*g)) problems.push_back(*problem);
    }
    results.push_back(problems.empty() ? passed(check.name, check.severity, check.urgent)
                                       : failed(check.name, check.severity, check.urgent, summarize_failures(problems)));
  }
  if (!scope.node_idle.value_or(false) && !scope.only_gpus)
    results.push_back(passed("stray_gpu_use", Severity::warning, false,
                             scope.node_idle ? "skipped: the node runs jobs" : "skipped: node state unknown"));
  return results;
}

GpuGrid gpu_grid(const GpuQuery& query, const HealthConfig& config, const GpuCheckScope& scope) {
  GpuGrid grid;
  auto off = [&](std::string_view check) {
    return std::count(config.disabled_checks.begin(), config.disabled_checks.end(), check) > 0;
  };
  switch (query.outcome) {
    case GpuQuery::Outcome::timed_out: grid.unknown = "GPU query timed out"; return grid;
    case GpuQuery::Outcome::failed: grid.unknown = clip_grid_text("GPU query failed: " + query.detail); return grid;
    case GpuQuery::Outcome::no_backend: grid.unknown = "no GPU driver found"; return grid;
    case GpuQuery::Outcome::ok: break;
  }
  const GpuSnapshot& s = query.snapshot;
  if (!s.ok) {
    grid.unknown = clip_grid_text(s.backend + " unusable: " + s.error);
    return grid;
  }
  if (!off("gpu_count"))
    for (const auto& r : evaluate_gpu_checks(query, config, scope))
      if (r.check == "gpu_count" && r.status == CheckStatus::fail) grid.gpu_count = clip_grid_text(r.detail);
  std::vector<GpuCheck> checks = per_gpu_checks(config, scope);
  std::erase_if(checks, [&](const GpuCheck& c) { return off(c.name); });
  for (const GpuCheck& c : checks) grid.checks.emplace_back(c.name);
  for (const auto& g : s.gpus) {
    if (scope.only_gpus && !std::count(scope.only_gpus->begin(), scope.only_gpus->end(), g.index)) continue;
    GpuGridRow row{g.index, clip_grid_text(g.bus_id), {}};
    for (const GpuCheck& c : checks) {
      // An unresponsive GPU reports nothing else worth judging (as in evaluate_gpu_checks).
      if (!g.responsive && std::string_view(c.name) != "gpu_responsive") continue;
      if (auto problem = c.test(g)) row.failed.emplace_back(c.name, clip_grid_text(*problem));
    }
    grid.gpus.push_back(std::move(row));
  }
  std::sort(grid.gpus.begin(), grid.gpus.end(), [](const GpuGridRow& a, const GpuGridRow& b) { return a.index < b.index; });
  return grid;
}

}  // namespace safe
