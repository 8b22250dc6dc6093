#include "common/cluster_shape.hpp"

#include <jansson.h>

#include <charconv>
#include <limits>

#include "common/json_value.hpp"

namespace safe {

const PartitionShape* ClusterShape::find(std::string_view name) const {
  for (const auto& p : partitions)
    if (p.name == name) return &p;
  return nullptr;
}

const PartitionShape* ClusterShape::default_partition() const {
  for (const auto& p : partitions)
    if (p.is_default) return &p;
  return nullptr;
}

std::string to_json(const ClusterShape& shape) {
  Json root = json_take(json_object());
  json_set(root.get(), "version", json_integer(1));
  json_set(root.get(), "written", json_integer(shape.written));
  json_t* parts = json_array();
  for (const auto& p : shape.partitions) {
    json_t* o = json_object();
    json_set(o, "name", json_str(p.name));
    json_set(o, "default", json_boolean(p.is_default));
    json_set(o, "whole_node", json_boolean(p.whole_node));
    json_set(o, "nodes", json_integer(p.nodes));
    json_set(o, "gpus_per_node", json_integer(p.gpus_per_node));
    json_set(o, "sockets_per_node", json_integer(p.sockets_per_node));
    json_array_append_new(parts, o);
  }
  json_set(root.get(), "partitions", parts);
  return json_document(root.get(), JSON_INDENT(1) | JSON_PRESERVE_ORDER);
}

std::optional<ClusterShape> parse_cluster_shape(std::string_view text) {
  Json root = json_take(json_loadb(text.data(), text.size(), 0, nullptr));
  if (!root || json_integer_value(json_object_get(root.get(), "version")) != 1) return std::nullopt;
  json_t* parts = json_object_get(root.get(), "partitions");
  if (!json_is_array(parts)) return std::nullopt;
  ClusterShape shape;
  shape.written = json_integer_value(json_object_get(root.get(), "written"));
  std::size_t i;
  json_t* o;
  json_array_foreach(parts, i, o) {
    PartitionShape p;
    p.name = json_string_or(o, "name");
    if (p.name.empty()) return std::nullopt;
    p.is_default = json_is_true(json_object_get(o, "default"));
    p.whole_node = json_is_true(json_object_get(o, "whole_node"));
    p.nodes = static_cast<int>(json_integer_value(json_object_get(o, "nodes")));
    p.gpus_per_node = static_cast<int>(json_integer_value(json_object_get(o, "gpus_per_node")));
    p.sockets_per_node = std::max(1, static_cast<int>(json_integer_value(json_object_get(o, "sockets_per_node"))));
    shape.partitions.push_back(std::move(p));
  }
  return shape;
}

int gpus_in_node_gres(std::string_view gres) {
  int total = 0;
  std::size_t pos = 0;
  while (pos < gres.size()) {
    // Entries are separated by commas outside parentheses ("gpu:8(S:0-1),nic:1").
    std::size_t end = pos;
    int depth = 0;
    while (end < gres.size() && (gres[end] != ',' || depth > 0)) {
      if (gres[end] == '(') ++depth;
      if (gres[end] == ')') --depth;
      ++end;
    }
    std::string_view entry = gres.substr(pos, end - pos);
    pos = end + 1;
    entry = entry.substr(0, entry.find('('));
    if (!entry.starts_with("gpu")) continue;
    if (entry.size() > 3 && entry[3] != ':') continue;  // "gpux" is another resource
    std::string_view count = entry.substr(entry.rfind(':') + 1);
    int n = 0;
    auto [p, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    bool counted = ec == std::errc() && p == count.data() + count.size() && entry.find(':') != std::string_view::npos;
    if (counted && n < 0) continue;  // "gpu:-8" is no count: a sum that went down would undercount the cluster
    int add = counted ? n : entry == "gpu" ? 1 : 0;
    total = add > std::numeric_limits<int>::max() - total ? std::numeric_limits<int>::max() : total + add;
  }
  return total;
}

std::string cluster_shape_path(const std::string& controller_state_dir) {
  return controller_state_dir + "/cluster-shape.json";
}

}  // namespace safe
