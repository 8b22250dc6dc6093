#include "common/gpu_snapshot.hpp"

#include <jansson.h>

#include <cstdio>
#include <memory>

#include "common/json_utf8.hpp"
#include "common/json_value.hpp"

namespace safe {
namespace {

void set_int(json_t* o, const char* key, long long v) { json_object_set_new(o, key, json_integer(v)); }

long long get_int(json_t* o, const char* key, long long fallback) {
  json_t* v = json_object_get(o, key);
  return json_is_integer(v) ? json_integer_value(v) : fallback;
}
bool get_bool(json_t* o, const char* key, bool fallback) {
  json_t* v = json_object_get(o, key);
  return json_is_boolean(v) ? json_is_true(v) : fallback;
}
std::string get_string(json_t* o, const char* key) {
  json_t* v = json_object_get(o, key);
  return json_is_string(v) ? json_string_value(v) : "";
}

}  // namespace

std::string to_json(const GpuSnapshot& s) {
  Json root(json_object());
  json_object_set_new(root.get(), "backend", json_utf8(s.backend));
  json_object_set_new(root.get(), "ok", json_boolean(s.ok));
  if (!s.error.empty()) json_object_set_new(root.get(), "error", json_utf8(s.error));
  if (s.pci_gpu_count >= 0) set_int(root.get(), "pci_gpu_count", s.pci_gpu_count);
  if (s.hang) json_object_set_new(root.get(), "hang", json_true());
  json_t* gpus = json_array();
  for (const auto& g : s.gpus) {
    json_t* o = json_object();
    set_int(o, "index", g.index);
    json_object_set_new(o, "bus_id", json_utf8(g.bus_id));
    json_object_set_new(o, "responsive", json_boolean(g.responsive));
    if (!g.error.empty()) json_object_set_new(o, "error", json_utf8(g.error));
    set_int(o, "temperature_c", g.temperature_c);
    set_int(o, "slowdown_c", g.slowdown_c);
    set_int(o, "ecc_correctable", g.ecc_correctable);
    set_int(o, "ecc_uncorrectable", g.ecc_uncorrectable);
    set_int(o, "retired_pages", g.retired_pages);
    json_object_set_new(o, "remap_pending", json_boolean(g.remap_pending));
    json_object_set_new(o, "remap_failed", json_boolean(g.remap_failed));
    set_int(o, "pcie_replay", g.pcie_replay);
    set_int(o, "link_gen", g.link_gen);
    set_int(o, "link_width", g.link_width);
    set_int(o, "link_max_gen", g.link_max_gen);
    set_int(o, "link_max_width", g.link_max_width);
    set_int(o, "xgmi_links", g.xgmi_links);
    set_int(o, "xgmi_links_inactive", g.xgmi_links_inactive);
    set_int(o, "xgmi_errors", g.xgmi_errors);
    set_int(o, "memory_used_mib", g.memory_used_mib);
    set_int(o, "memory_total_mib", g.memory_total_mib);
    set_int(o, "numa_node", g.numa_node);
    json_t* procs = json_array();
    for (const auto& p : g.processes) {
      json_t* po = json_object();
      set_int(po, "pid", p.pid);
      set_int(po, "memory_mib", p.memory_mib);
      json_object_set_new(po, "name", json_utf8(p.name));
      json_array_append_new(procs, po);
    }
    json_object_set_new(o, "processes", procs);
    json_array_append_new(gpus, o);
  }
  json_object_set_new(root.get(), "gpus", gpus);
  return json_document(root.get(), JSON_INDENT(1) | JSON_PRESERVE_ORDER);
}

Result<GpuSnapshot> gpu_snapshot_from_json(std::string_view text) {
  json_error_t jerr;
  Json root(json_loadb(text.data(), text.size(), 0, &jerr));
  if (!root) return Error{"line " + std::to_string(jerr.line) + ": " + jerr.text};
  if (!json_is_object(root.get())) return Error{"expects a JSON object"};
  GpuSnapshot s;
  s.backend = get_string(root.get(), "backend");
  s.ok = get_bool(root.get(), "ok", true);
  s.error = get_string(root.get(), "error");
  s.pci_gpu_count = static_cast<int>(get_int(root.get(), "pci_gpu_count", -1));
  s.hang = get_bool(root.get(), "hang", false);
  json_t* gpus = json_object_get(root.get(), "gpus");
  if (gpus && !json_is_array(gpus)) return Error{"\"gpus\" must be a list"};
  std::size_t i;
  json_t* o;
  json_array_foreach(gpus, i, o) {
    if (!json_is_object(o)) return Error{"gpus[" + std::to_string(i) + "] must be an object"};
    GpuDevice g;
    g.index = static_cast<int>(get_int(o, "index", static_cast<long long>(i)));
    g.bus_id = get_string(o, "bus_id");
    g.responsive = get_bool(o, "responsive", true);
    g.error = get_string(o, "error");
    g.temperature_c = static_cast<int>(get_int(o, "temperature_c", -1));
    g.slowdown_c = static_cast<int>(get_int(o, "slowdown_c", -1));
    g.ecc_correctable = get_int(o, "ecc_correctable", 0);
    g.ecc_uncorrectable = get_int(o, "ecc_uncorrectable", 0);
    g.retired_pages = static_cast<int>(get_int(o, "retired_pages", 0));
    g.remap_pending = get_bool(o, "remap_pending", false);
    g.remap_failed = get_bool(o, "remap_failed", false);
    g.pcie_replay = get_int(o, "pcie_replay", 0);
    g.link_gen = static_cast<int>(get_int(o, "link_gen", 0));
    g.link_width = static_cast<int>(get_int(o, "link_width", 0));
    g.link_max_gen = static_cast<int>(get_int(o, "link_max_gen", 0));
    g.link_max_width = static_cast<int>(get_int(o, "link_max_width", 0));
    g.xgmi_links = static_cast<int>(get_int(o, "xgmi_links", 0));
    g.xgmi_links_inactive = static_cast<int>(get_int(o, "xgmi_links_inactive", 0));
    g.xgmi_errors = get_int(o, "xgmi_errors", 0);
    g.memory_used_mib = get_int(o, "memory_used_mib", 0);
    g.memory_total_mib = get_int(o, "memory_total_mib", 0);
    g.numa_node = static_cast<int>(get_int(o, "numa_node", -1));
    std::size_t k;
    json_t* po;
    json_array_foreach(json_object_get(o, "processes"), k, po) {
      GpuProcess p;
      p.pid = static_cast<int>(get_int(po, "pid", 0));
      p.memory_mib = get_int(po, "memory_mib", 0);
      p.name = get_string(po, "name");
      g.processes.push_back(std::move(p));
    }
    s.gpus.push_back(std::move(g));
  }
  return s;
}

GpuDevice healthy_sim_gpu(int index) {
  GpuDevice g;
  g.index = index;
  char bus[32];
  std::snprintf(bus, sizeof bus, "0000:%02x:00.0", 0x11 + 0x10 * index);
  g.bus_id = bus;
  g.temperature_c = 45;
  g.slowdown_c = 100;
  g.link_gen = g.link_max_gen = 5;
  g.link_width = g.link_max_width = 16;
  g.xgmi_links = 7;
  g.memory_used_mib = 0;
  g.memory_total_mib = 196608;
  g.numa_node = index < 4 ? 0 : 1;
  return g;
}

GpuSnapshot healthy_sim_snapshot(int count) {
  GpuSnapshot s;
  s.backend = "sim";
  for (int i = 0; i < count; ++i) s.gpus.push_back(healthy_sim_gpu(i));
  return s;
}

}  // namespace safe
