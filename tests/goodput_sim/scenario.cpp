#include "tests/goodput_sim/scenario.hpp"

#include <algorithm>
#include <random>

namespace safe::sim {
namespace {

// Llama 3's Table 5 (../shared/reference/fault-tolerance.md): 419 unexpected interruptions in 54
// days, 350 of them a node's fault. Visibility and repair times are this simulator's assumptions
// (docs/benchmarks.md lists them); the job-level causes strike the job, not a node.
std::vector<Cause> table5_causes() {
  using V = Visibility;
  using E = Effect;
  return {
      {"faulty GPU", 148, true, V::health, E::crash, true, true, 8},
      {"GPU HBM3 memory", 72, true, V::health, E::crash, true, true, 4},
      {"network switch/cable", 35, true, V::health, E::hang, false, false, 2},
      {"host maintenance", 32, true, V::node_down, E::crash, true, false, 2},
      {"GPU SRAM", 19, true, V::health, E::crash, true, true, 8},
      {"GPU system processor", 17, true, V::health, E::crash, true, true, 8},
      {"NIC", 7, true, V::health, E::hang, false, false, 6},
      {"GPU thermal", 6, true, V::health, E::degrade, false, true, 4},
      {"host hardware (SSD, power, chassis, IO board, CPU, memory)", 14, true, V::node_down, E::crash, true, false, 24},
      {"software bug", 54, false, V::user, E::crash, true, false, 0},
      {"NCCL watchdog timeout", 7, false, V::progress, E::hang, true, false, 0},
      {"silent data corruption", 6, false, V::none, E::crash, true, false, 0},
      {"dependency", 2, false, V::infra_exit, E::crash, true, false, 0},
  };
}

double share_of(const std::vector<Cause>& causes, bool node_level) {
  double s = 0;
  for (const Cause& c : causes)
    if (c.node_level == node_level) s += c.share;
  return s;
}

constexpr double kLlamaDays = 54, kLlamaNodes = 2048;

struct Digest {
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  void add(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  }
  void add(double v) { add(&v, sizeof v); }
  void add(int v) { add(&v, sizeof v); }
};

// A cause drawn by share among those of one level.
int draw_cause(const std::vector<Cause>& causes, bool node_level, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0, share_of(causes, node_level));
  double x = u(rng);
  int last = -1;
  for (int i = 0; i < static_cast<int>(causes.size()); ++i) {
    if (causes[i].node_level != node_level) continue;
    last = i;
    if (x < causes[i].share) return i;
    x -= causes[i].share;
  }
  return last;
}

}  // namespace

Scenario llama3(bool short_run) {
  Scenario s;
  s.name = "llama3";
  s.nodes = 2048;
  s.days = short_run ? 6 : kLlamaDays;
  s.ckpt_intervals_min = short_run ? std::vector<int>{30} : std::vector<int>{5, 30, 60};
  s.spares = short_run ? std::vector<int>{16} : std::vector<int>{0, 16, 64};
  s.causes = table5_causes();
  s.lemons = 8;
  // 350 node faults on the job's 2,048 nodes in 54 days, lemons included; 69 job-level ones.
  s.node_faults_per_node_day =
      share_of(s.causes, true) / ((s.nodes - s.lemons + s.lemons * s.lemon_factor) * kLlamaDays);
  s.job_faults_per_node_hour = share_of(s.causes, false) / (kLlamaNodes * kLlamaDays * 24);
  return s;
}

Scenario mixed(bool short_run) {
  Scenario s;
  s.name = "mixed";
  s.nodes = 512;
  s.days = short_run ? 3 : 30;
  s.ckpt_intervals_min = short_run ? std::vector<int>{30} : std::vector<int>{5, 30, 60};
  s.spares = {0};
  s.causes = table5_causes();
  s.lemons = 4;
  // Meta RSC-1: 6.50 node failures per 1,000 node-days; job-level causes as often per node-hour
  // as in Llama 3.
  s.node_faults_per_node_day = 6.5 / 1000;
  s.job_faults_per_node_hour = share_of(s.causes, false) / (kLlamaNodes * kLlamaDays * 24);
  s.load = 0.7;
  s.job_nodes = {1, 2, 4, 8, 16, 32, 64, 128};  // 8 to 1,024 GPUs
  s.job_work_mean_h = 12;
  return s;
}

Scenario meta_model() {
  Scenario s;
  s.name = "meta";
  s.nodes = 2048;
  s.days = 365;  // a year, so that the number of failures drawn is close to its mean
  s.ckpt_intervals_min = {5, 60};
  s.spares = {0};
  // One failure every 1.8 h of the job, each a retried infrastructure exit on healthy nodes: no
  // repair, no wait for nodes; the restart costs startup + restore + SaFE's credential wait ~ 5 min.
  s.causes = {{"failure (MTTF 1.8 h)", 1, false, Visibility::infra_exit, Effect::crash, true, false, 0}};
  s.job_faults_per_node_hour = 1 / (1.8 * s.nodes);
  s.costs.save_s = 0;
  s.costs.startup_s = 120;
  s.costs.restore_s = 60;
  return s;
}

Trace draw_trace(const Scenario& scenario, int spares, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const double horizon = scenario.days * 86400;
  int widest = spares;
  for (int n : scenario.spares) widest = std::max(widest, n);
  Trace t;
  t.cluster_nodes = scenario.nodes + spares;
  const int drawn_nodes = scenario.nodes + widest;

  // Jobs: one on all the nodes for the whole run, or a stream at the scenario's load.
  if (scenario.load <= 0) {
    t.jobs.push_back({0, scenario.nodes, -1});
  } else {
    double mean_nodes = 0;
    for (int n : scenario.job_nodes) mean_nodes += n;
    mean_nodes /= static_cast<double>(scenario.job_nodes.size());
    double per_s = scenario.load * scenario.nodes / (mean_nodes * scenario.job_work_mean_h * 3600);
    std::exponential_distribution<double> gap(per_s), work(1 / (scenario.job_work_mean_h * 3600));
    std::uniform_int_distribution<std::size_t> size(0, scenario.job_nodes.size() - 1);
    for (double at = gap(rng); at < horizon; at += gap(rng))
      t.jobs.push_back({at, scenario.job_nodes[size(rng)], std::clamp(work(rng), 600.0, 7 * 86400.0)});
  }

  // Lemons among all the nodes a run may have.
  t.lemon.assign(drawn_nodes, false);
  std::vector<int> order(drawn_nodes);
  for (int i = 0; i < drawn_nodes; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  for (int i = 0; i < std::min(scenario.lemons, drawn_nodes); ++i) t.lemon[order[i]] = true;

  // Node faults: a Poisson process per node; repair times exponential around the cause's mean.
  for (int node = 0; node < drawn_nodes; ++node) {
    double rate = scenario.node_faults_per_node_day / 86400 * (t.lemon[node] ? scenario.lemon_factor : 1);
    if (rate <= 0) continue;
    std::exponential_distribution<double> gap(rate);
    for (double at = gap(rng); at < horizon; at += gap(rng)) {
      int cause = draw_cause(scenario.causes, true, rng);
      std::exponential_distribution<double> repair(1 / (scenario.causes[cause].repair_h * 3600));
      double repair_s = repair(rng);
      if (node < t.cluster_nodes) t.faults.push_back({at, node, -1, cause, repair_s, false});
    }
  }
  // Job-level faults: a Poisson process per job from its submission, in proportion to its size;
  // one that strikes while the job is not running is counted as such.
  std::uniform_real_distribution<double> unit(0, 1);
  for (int j = 0; j < static_cast<int>(t.jobs.size()); ++j) {
    double rate = scenario.job_faults_per_node_hour / 3600 * t.jobs[j].nodes;
    if (rate <= 0) continue;
    std::exponential_distribution<double> gap(rate);
    for (double at = t.jobs[j].submit_s + gap(rng); at < horizon; at += gap(rng)) {
      int cause = draw_cause(scenario.causes, false, rng);
      bool persistent = scenario.causes[cause].visible == Visibility::user && unit(rng) < scenario.persistent_bug_share;
      t.faults.push_back({at, -1, j, cause, 0, persistent});
    }
  }
  std::stable_sort(t.faults.begin(), t.faults.end(),
                   [](const TraceFault& a, const TraceFault& b) { return a.time_s < b.time_s; });

  Digest d;
  for (const JobSpec& j : t.jobs) {
    d.add(j.submit_s);
    d.add(j.nodes);
    d.add(j.work_s);
  }
  for (const TraceFault& f : t.faults) {
    d.add(f.time_s);
    d.add(f.node);
    d.add(f.job);
    d.add(f.cause);
    d.add(f.repair_s);
    d.add(f.persistent ? 1 : 0);
  }
  for (int i = 0; i < t.cluster_nodes; ++i) d.add(t.lemon[i] ? 1 : 0);
  t.digest = d.h;
  return t;
}

}  // namespace safe::sim
