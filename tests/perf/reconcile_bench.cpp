// reconcile_bench: one safed reconcile pass over a synthetic cluster (default 10,000 nodes,
// 100,000 jobs, a third of them SaFE jobs), with the real planner and SQLite state store and a
// fake Slurm. Prints the time of the first pass (every SaFE job recorded), of a steady pass (what
// safed does every second), of a pass with 100 failures, of one round of slurmd probes (real TCP
// connects to a loopback listener standing in for every busy node's slurmd) with its judgement,
// and the peak memory. A benchmark: it prints figures and fails only if the planner breaks, never
// on a time.
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "controller/safed/dead_node_detector.hpp"
#include "controller/safed/failover_planner.hpp"
#include "controller/safed/slurmd_prober.hpp"
#include "tests/unit/fake_slurm.hpp"
#include "tests/unit/loopback_listener.hpp"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

long peak_rss_mib() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024;
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = argc > 1 ? std::atoi(argv[1]) : 10000;
  int jobs = argc > 2 ? std::atoi(argv[2]) : 100000;
  std::string dir = std::filesystem::temp_directory_path() / ("safe-reconcile-bench-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);

  safe::testing::FakeSlurm slurm;
  safe::testing::FakeFiles files;
  safe::testing::ServingListener slurmd{4096};
  for (int i = 0; i < nodes; ++i) {
    safe::SlurmNode n;
    n.name = "gpu" + std::to_string(i);
    n.addr = "127.0.0.1";
    n.port = slurmd.port();
    slurm.nodes.push_back(n);
  }
  for (int i = 0; i < jobs; ++i) {
    safe::SlurmJob j;
    j.id = 1000 + static_cast<std::uint32_t>(i);
    j.name = "job" + std::to_string(i);
    int node = (i * 7) % (nodes - 8);
    j.nodes = "gpu[" + std::to_string(node) + "-" + std::to_string(node + 7) + "]";
    j.num_nodes = 8;
    j.submit_time = 1000;
    j.start_time = 1100;
    // Half running, a quarter pending, a quarter finished; a third are SaFE jobs.
    j.state = i % 4 == 0 ? safe::SlurmJobState::pending
              : i % 4 == 1 ? safe::SlurmJobState::complete
                           : safe::SlurmJobState::running;
    if (j.state == safe::SlurmJobState::complete) j.end_time = 1500;
    if (i % 3 == 0) j.admin_comment = "safe: ws=ml retries=0/3 health=standard sig=USR1@120 hang=0 gpus=64 ckpt=/ckpt/" + std::to_string(i);
    else j.admin_comment = "";
    slurm.jobs.push_back(j);
  }
  safe::SafeConfig config;
  config.failover.rate_limit_per_minute = 1000;
  safe::StateStore store(dir + "/safed.sqlite");
  safe::FailoverPlanner planner(config, slurm, store, files, slurm.output_pattern_dialect());

  long long now = 2000;
  slurm.now = now;
  auto t0 = std::chrono::steady_clock::now();
  planner.reconcile(slurm.jobs, slurm.nodes, now);
  double first = ms_since(t0);

  double steady = 0;
  const int rounds = 5;
  for (int r = 0; r < rounds; ++r) {
    slurm.now = ++now;
    t0 = std::chrono::steady_clock::now();
    planner.reconcile(slurm.jobs, slurm.nodes, now);
    steady += ms_since(t0);
  }
  steady /= rounds;

  // 100 SaFE jobs fail at once on a node that SaFE drained.
  int failed = 0;
  for (auto& j : slurm.jobs) {
    if (failed == 100) break;
    if (j.admin_comment.empty() || j.state != safe::SlurmJobState::running) continue;
    j.state = safe::SlurmJobState::failed;
    j.exit_code = 75 << 8;
    j.end_time = now;
    ++failed;
  }
  slurm.now = ++now;
  t0 = std::chrono::steady_clock::now();
  planner.reconcile(slurm.jobs, slurm.nodes, now);
  double failing = ms_since(t0);
  int requeues = slurm.count("requeue");

  // One round of slurmd probes over every node that runs a SaFE job, as safed's probe thread does
  // it: targets and judgement under safed's lock, the connects without it.
  safe::DeadNodeDetector detector(slurm, store);
  t0 = std::chrono::steady_clock::now();
  auto targets = detector.targets(planner);
  double targets_first_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  targets = detector.targets(planner);  // host lists already expanded: what every later round costs
  double targets_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  auto results = safe::probe_slurmds(targets, 1000, 256);
  double probe_ms = ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  detector.apply(results, planner, {3, 2}, now * 1000, now);
  double judge_ms = ms_since(t0);
  std::size_t answered = 0;
  for (const auto& r : results) answered += r.outcome == safe::ProbeOutcome::connected;

  std::printf("reconcile pass over %d nodes and %d jobs (%zu SaFE jobs tracked)\n", nodes, jobs, planner.jobs().size());
  std::printf("  first pass (records every SaFE job): %8.1f ms\n", first);
  std::printf("  steady pass (every poll):            %8.1f ms\n", steady);
  std::printf("  pass with 100 failures:              %8.1f ms (%d requeues)\n", failing, requeues);
  std::printf("  slurmd probe round over %zu busy nodes: targets %.1f ms (first round %.1f ms), connects %.1f ms "
              "(%zu answered), judgement %.1f ms\n",
              targets.size(), targets_ms, targets_first_ms, probe_ms, answered, judge_ms);
  std::printf("  peak memory (RSS, incl. the synthetic Slurm data): %ld MiB\n", peak_rss_mib());
  std::filesystem::remove_all(dir);
  return requeues == 100 && answered == targets.size() ? 0 : 1;
}
