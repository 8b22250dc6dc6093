#include "common/gpu_request.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

namespace safe {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// "8", "2k" (Slurm accepts k/m/g suffixes on gres counts)
std::optional<long long> parse_count(std::string_view text) {
  long long multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k': case 'K': multiplier = 1024; break;
      case 'm': case 'M': multiplier = 1024LL * 1024; break;
      case 'g': case 'G': multiplier = 1024LL * 1024 * 1024; break;
      default: break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  if (text.empty() || text.size() > 9) return std::nullopt;
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value < 0) return std::nullopt;
  return value * multiplier;
}

// GPU type names (a100, mi300x) start with a letter; anything else in that place is a count.
bool is_type_name(std::string_view s) {
  if (s.empty() || !isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) return false;
  return true;
}

// gres/shard and gres/mps: fractions of a GPU, shared by several jobs.
bool names_gpu_shares(std::string_view tres) {
  for (std::string_view entry : split(tres, ',')) {
    if (entry.starts_with("gres:") || entry.starts_with("gres/")) entry.remove_prefix(5);
    std::string_view name = entry.substr(0, entry.find_first_of(":="));  // shard:4, shard=4
    if (name == "shard" || name == "mps") return true;
  }
  return false;
}

}  // namespace

std::optional<long long> gpus_in_tres(std::string_view tres) {
  long long total = 0;
  for (std::string_view entry : split(tres, ',')) {
    if (entry.empty()) continue;
    // Slurm writes "gres:gpu:..." in job requests and "gres/gpu:..." in TRES strings.
    if (entry.starts_with("gres:") || entry.starts_with("gres/")) entry.remove_prefix(5);
    std::vector<std::string_view> fields = split(entry, ':');
    std::string_view name = fields[0];
    if (auto eq = name.find('='); eq != std::string_view::npos) {  // "gpu=2" TRES form
      if (name.substr(0, eq) != "gpu") continue;
      auto n = parse_count(name.substr(eq + 1));
      if (!n) return std::nullopt;
      total += *n;
      continue;
    }
    if (name != "gpu") continue;
    // gpu | gpu:N | gpu:TYPE | gpu:TYPE:N
    long long count = 1;
    if (fields.size() == 2 && !is_type_name(fields[1])) {
      auto n = parse_count(fields[1]);
      if (!n) return std::nullopt;
      count = *n;
    } else if (fields.size() == 3) {
      if (!is_type_name(fields[1])) return std::nullopt;
      auto n = parse_count(fields[2]);
      if (!n) return std::nullopt;
      count = *n;
    } else if (fields.size() > 3) {
      return std::nullopt;
    }
    total += count;
    if (total > (1LL << 40)) return std::nullopt;
  }
  return total;
}

GpuCharge charge_gpus(const GpuRequest& r, const NodeCapacity& cap) {
  GpuCharge out;
  auto read = [&](const std::string& tres, const char* option) -> long long {
    if (tres.empty() || !out.error.empty()) return 0;
    auto n = gpus_in_tres(tres);
    if (!n) {
      out.error = std::string("safe: cannot read the GPU request '") + tres + "' (" + option + ")";
      return 0;
    }
    return *n;
  };
  long long per_job = read(r.tres_per_job, "--gpus");
  long long per_node = read(r.tres_per_node, "--gpus-per-node/--gres");
  long long per_task = read(r.tres_per_task, "--gpus-per-task");
  long long per_socket = read(r.tres_per_socket, "--gpus-per-socket");
  if (!out.error.empty()) return out;
  for (const std::string* tres : {&r.tres_per_job, &r.tres_per_node, &r.tres_per_task, &r.tres_per_socket})
    out.gpu_shares = out.gpu_shares || names_gpu_shares(*tres);

  bool whole = r.exclusive || r.core_spec || (cap.known && cap.whole_node);
  bool node_count_matters = whole || per_node || per_task || per_socket || r.ntasks_per_tres;
  // How many nodes Slurm may give the job.
  long long min_nodes = r.min_nodes > 0 ? r.min_nodes : 1;
  long long nodes = min_nodes;
  if (r.max_nodes > 0) {
    nodes = std::max<long long>(r.max_nodes, min_nodes);
  } else if (r.num_tasks > 0) {
    nodes = std::max<long long>(r.num_tasks, min_nodes);
  } else if (node_count_matters) {
    out.max_nodes = static_cast<uint32_t>(min_nodes);  // so that Slurm cannot give it more
  }
  if (cap.known && cap.nodes > 0 && nodes > cap.nodes) {
    // Charged for the partition as it is now: bound the job to that, or a partition that grows
    // (or a shape read while nodes were down) would let Slurm give it more than was charged.
    nodes = cap.nodes;
    if (node_count_matters && min_nodes <= cap.nodes) out.max_nodes = static_cast<uint32_t>(nodes);
  }
  std::string node_text = std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");

  long long best = per_job;
  out.how = "--gpus";
  auto consider = [&](long long gpus, std::string how) {
    if (gpus > best) best = gpus, out.how = std::move(how);
  };
  out.needs_capacity = (whole || per_socket) && !cap.known;
  long long node_gpus = cap.known ? cap.gpus_per_node : 0;
  if (whole)
    consider(node_gpus * nodes, node_text + " x " + std::to_string(node_gpus) + " GPUs: " +
                                    (r.exclusive ? "--exclusive" : r.core_spec ? "--core-spec" : "an exclusive partition") +
                                    " gives whole nodes");
  consider(per_node * nodes, node_text + " x " + std::to_string(per_node) + " GPUs");
  if (per_task) {
    long long tasks = r.num_tasks > 0 ? r.num_tasks : r.ntasks_per_node > 0 ? r.ntasks_per_node * nodes : nodes;
    long long gpus = per_task * tasks;
    if (node_gpus > 0) gpus = std::min(gpus, node_gpus * nodes);  // no node gives more than it has
    consider(gpus, std::to_string(tasks) + " tasks x " + std::to_string(per_task) + " GPUs");
  }
  if (per_socket) {
    // Slurm may allocate per-socket GPUs on every socket of a node, not only the ones asked for.
    long long sockets = std::max<long long>(cap.sockets_per_node, r.sockets_per_node);
    long long gpus = std::min(per_socket * sockets, node_gpus > 0 ? node_gpus : per_socket * sockets) * nodes;
    consider(gpus, node_text + " x " + std::to_string(sockets) + " sockets x " + std::to_string(per_socket) + " GPUs");
  }
  if (r.ntasks_per_tres && !per_job && !per_node && !per_task && !per_socket) {
    // --ntasks-per-gpu alone: one GPU per that many tasks, one per node when no task count is given.
    long long gpus = r.num_tasks > 0 ? (r.num_tasks + r.ntasks_per_tres - 1) / r.ntasks_per_tres : nodes;
    consider(gpus, "--ntasks-per-gpu");
  }
  out.gpus = best;
  if (best == 0) out.max_nodes.reset();  // nothing charged: nothing to bound
  return out;
}

}  // namespace safe
