#include "common/gpu_grid.hpp"

#include <regex>
#include <set>
#include <utility>

#include "common/json_value.hpp"

namespace safe {
namespace {

constexpr std::size_t kMaxGpus = 64, kMaxChecks = 32, kMaxText = 1024;

bool text_ok(const json_t* v) { return json_is_string(v) && json_string_length(v) <= kMaxText; }

}  // namespace

std::string clip_grid_text(std::string_view text) {
  constexpr std::size_t kMax = 256;
  std::string valid = valid_utf8(text);
  if (valid.size() <= kMax) return valid;
  std::size_t cut = kMax - 3;
  while (cut > 0 && (static_cast<unsigned char>(valid[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return valid.substr(0, cut) + "...";
}

std::string to_json(const NodeGpuReport& report) {
  Json root = json_take(json_object());
  json_set(root.get(), "node", json_str(report.node));
  json_set(root.get(), "time", json_integer(report.time));
  json_set(root.get(), "backend", json_str(report.backend));
  json_t* checks = json_array();
  for (const auto& c : report.grid.checks) json_array_append_new(checks, json_str(c));
  json_set(root.get(), "checks", checks);
  json_t* gpus = json_array();
  for (const auto& g : report.grid.gpus) {
    json_t* o = json_object();
    json_set(o, "index", json_integer(g.index));
    json_set(o, "bus_id", json_str(g.bus_id));
    json_t* failed = json_array();
    for (const auto& [check, detail] : g.failed) {
      json_t* f = json_object();
      json_set(f, "check", json_str(check));
      json_set(f, "detail", json_str(detail));
      json_array_append_new(failed, f);
    }
    json_set(o, "failed", failed);
    json_array_append_new(gpus, o);
  }
  json_set(root.get(), "gpus", gpus);
  json_set(root.get(), "gpu_count", json_str(report.grid.gpu_count));
  json_set(root.get(), "unknown", json_str(report.grid.unknown));
  return json_text(root.get());
}

Result<NodeGpuReport> parse_node_gpu_report(std::string_view text) {
  json_error_t err;
  Json doc = json_take(json_loadb(text.data(), text.size(), 0, &err));
  if (!doc || !json_is_object(doc.get())) return Error{"not a JSON object: " + std::string(err.text)};
  static const std::regex node_name(R"([A-Za-z0-9_.-]{1,255})");
  NodeGpuReport r;
  r.node = json_string_or(doc.get(), "node");
  if (!std::regex_match(r.node, node_name)) return Error{"node must be a Slurm node name"};
  const json_t* time = json_object_get(doc.get(), "time");
  if (!json_is_integer(time) || json_integer_value(time) < 0) return Error{"time must be seconds since the epoch"};
  r.time = json_integer_value(time);
  for (const char* key : {"backend", "gpu_count", "unknown"})
    if (!text_ok(json_object_get(doc.get(), key))) return Error{std::string(key) + " must be a string of at most 1024 bytes"};
  r.backend = json_string_or(doc.get(), "backend");
  r.grid.gpu_count = json_string_or(doc.get(), "gpu_count");
  r.grid.unknown = json_string_or(doc.get(), "unknown");
  const json_t* checks = json_object_get(doc.get(), "checks");
  if (!json_is_array(checks) || json_array_size(checks) > kMaxChecks) return Error{"checks must be a list of at most 32 names"};
  std::size_t i;
  const json_t* v;
  json_array_foreach(checks, i, v) {
    if (!text_ok(v)) return Error{"checks must be a list of names"};
    r.grid.checks.emplace_back(json_string_value(v));
  }
  const json_t* gpus = json_object_get(doc.get(), "gpus");
  std::set<json_int_t> indices;
  if (!json_is_array(gpus) || json_array_size(gpus) > kMaxGpus) return Error{"gpus must be a list of at most 64 GPUs"};
  json_array_foreach(gpus, i, v) {
    const json_t* index = json_object_get(v, "index");
    const json_t* failed = json_object_get(v, "failed");
    if (!json_is_integer(index) || json_integer_value(index) < 0 || json_integer_value(index) > 1023 ||
        !text_ok(json_object_get(v, "bus_id")) || !json_is_array(failed) || json_array_size(failed) > kMaxChecks)
      return Error{"each of gpus needs an index (0-1023), a bus_id and a list of failed checks"};
    if (!indices.insert(json_integer_value(index)).second) return Error{"gpus names GPU " + std::to_string(json_integer_value(index)) + " twice"};
    GpuGridRow row{static_cast<int>(json_integer_value(index)), json_string_or(v, "bus_id"), {}};
    std::size_t k;
    const json_t* f;
    json_array_foreach(failed, k, f) {
      if (!text_ok(json_object_get(f, "check")) || !text_ok(json_object_get(f, "detail")))
        return Error{"each failed check needs a check and a detail"};
      row.failed.emplace_back(json_string_or(f, "check"), json_string_or(f, "detail"));
    }
    r.grid.gpus.push_back(std::move(row));
  }
  return r;
}

}  // namespace safe
