#include "healthcheck/gpu_collector.hpp"

#include <unistd.h>

#include <climits>
#include <iostream>

#include "healthcheck/gpu_backend.hpp"
#include "healthcheck/node_setup.hpp"

namespace safe {

std::vector<std::string> gpu_child_argv(const GpuChildArgs& a) {
  std::vector<std::string> argv = {a.self_exe, kGpuSnapshotChildFlag, "--node", a.node, "--root", a.root};
  if (!a.config_path.empty()) argv.insert(argv.end(), {"--config", a.config_path});
  return argv;
}

GpuQuery query_gpus(ProcessRunner& runner, const GpuChildArgs& args, std::chrono::milliseconds timeout) {
  GpuQuery q;
  ProcessResult r = runner.run(gpu_child_argv(args), timeout);
  if (r.outcome == ProcessResult::Outcome::timed_out) {
    q.outcome = GpuQuery::Outcome::timed_out;
    q.detail = "no answer within " + std::to_string(timeout.count()) + " ms";
    return q;
  }
  if (!r.ok()) {
    q.outcome = GpuQuery::Outcome::failed;
    std::string err = r.err.substr(0, r.err.find('\n'));
    q.detail = "GPU query " + r.describe() + (err.empty() ? "" : ": " + err);
    return q;
  }
  auto snapshot = gpu_snapshot_from_json(r.out);
  if (!snapshot) {
    q.outcome = GpuQuery::Outcome::failed;
    q.detail = "GPU query printed bad JSON: " + snapshot.error();
    return q;
  }
  q.outcome = snapshot->backend == "none" ? GpuQuery::Outcome::no_backend : GpuQuery::Outcome::ok;
  q.snapshot = std::move(*snapshot);
  return q;
}

int gpu_snapshot_child_main(const std::vector<std::string>& args) {
  std::string node, root = "/", config_path;
  for (std::size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--node") node = args[i + 1];
    else if (args[i] == "--root") root = args[i + 1];
    else if (args[i] == "--config") config_path = args[i + 1];
  }
  bool explicit_path = !config_path.empty();
  if (config_path.empty()) config_path = node_config_path(explicit_path);
  // The parent resolved the path; a default file that does not exist means all defaults there too.
  auto config = load_node_config(config_path, false);
  if (!config) {
    std::cerr << config.error() << "\n";
    return 2;
  }
  NodeFs fs(root);
  auto backend = make_gpu_backend(config->health, fs, node);
  GpuSnapshot snapshot;
  if (!backend) snapshot.backend = "none";
  else snapshot = backend->collect();
  std::cout << to_json(snapshot);
  std::cout.flush();
  return 0;
}

std::string self_executable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  buf[n] = '\0';
  return buf;
}

}  // namespace safe
