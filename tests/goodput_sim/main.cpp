// safe-goodput-sim: plain Slurm, Primus-SaFE and SaFE on the same simulated fault trace, at
// Llama 3's scale (docs/benchmarks.md, "Goodput at scale").
//
//   safe-goodput-sim --scenario llama3|mixed|meta [--short] [--seed N] [--json FILE]
#include <jansson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/goodput_sim/simulation.hpp"

using namespace safe::sim;

namespace {

int usage(const char* why) {
  std::fprintf(stderr,
               "safe-goodput-sim: %s\n"
               "usage: safe-goodput-sim --scenario llama3|mixed|meta [--short] [--seed N] [--json FILE]\n",
               why);
  return 2;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

double hours(double gpu_s) { return gpu_s / 3600; }

json_t* digest_json(std::uint64_t digest) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest));
  return json_string(hex);
}

json_t* result_json(const SimResult& r, std::uint64_t digest) {
  json_t* o = json_object();
  json_object_set_new(o, "policy", json_string(to_string(r.settings.policy).c_str()));
  json_object_set_new(o, "ckpt_interval_min", json_integer(r.settings.ckpt_interval_min));
  json_object_set_new(o, "spares", json_integer(r.settings.spares));
  json_object_set_new(o, "ettr", json_real(r.ettr));
  json_object_set_new(o, "cluster_goodput", json_real(r.cluster_goodput));
  json_object_set_new(o, "allocated_goodput", json_real(r.allocated_goodput));
  json_object_set_new(o, "completed_work_gpu_hours", json_real(hours(r.completed_work_gpu_s)));
  json_object_set_new(o, "completed_kept_gpu_hours", json_real(hours(r.completed_kept_gpu_s)));
  json_object_set_new(o, "restarts", json_integer(r.restarts));
  json_object_set_new(o, "human_resubmits", json_integer(r.human_resubmits));
  json_object_set_new(o, "quarantines", json_integer(r.quarantines));
  json_object_set_new(o, "lost_gpu_hours", json_real(hours(r.time.lost())));
  json_t* by_cause = json_object();
  for (const auto& [cause, s] : r.time.lost_by_cause) json_object_set_new(by_cause, cause.c_str(), json_real(hours(s)));
  json_object_set_new(o, "lost_gpu_hours_by_cause", by_cause);
  json_object_set_new(o, "productive_gpu_hours", json_real(hours(r.time.productive)));
  json_object_set_new(o, "checkpoint_gpu_hours", json_real(hours(r.time.checkpoint)));
  json_object_set_new(o, "startup_gpu_hours", json_real(hours(r.time.startup)));
  json_object_set_new(o, "queued_gpu_hours", json_real(hours(r.time.queued)));
  json_object_set_new(o, "allocated_gpu_hours", json_real(hours(r.time.allocated)));
  json_t* mttr = json_object();
  json_object_set_new(mttr, "count", json_integer(static_cast<json_int_t>(r.mttr_s.size())));
  json_object_set_new(mttr, "median", json_real(percentile(r.mttr_s, 0.5)));
  json_object_set_new(mttr, "p90", json_real(percentile(r.mttr_s, 0.9)));
  json_object_set_new(mttr, "max", json_real(percentile(r.mttr_s, 1.0)));
  json_object_set_new(o, "mttr_s", mttr);
  json_object_set_new(o, "waiting_for_nodes_h", json_real(r.waiting_for_nodes_s / 3600));
  json_t* faults = json_object();
  json_object_set_new(faults, "trace", json_integer(r.trace_faults));
  json_object_set_new(faults, "interrupted", json_integer(r.faults.interrupted));
  json_object_set_new(faults, "idle_node", json_integer(r.faults.idle_node));
  json_object_set_new(faults, "out_of_service", json_integer(r.faults.out_of_service));
  json_object_set_new(faults, "job_not_running", json_integer(r.faults.job_not_running));
  json_object_set_new(o, "faults", faults);
  json_t* classified = json_object();
  for (const auto& [c, n] : r.classified) json_object_set_new(classified, c.c_str(), json_integer(n));
  json_object_set_new(o, "safe_classified", classified);
  json_object_set_new(o, "jobs", json_integer(r.jobs));
  json_object_set_new(o, "jobs_completed", json_integer(r.jobs_completed));
  json_object_set_new(o, "trace_digest", digest_json(digest));
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  std::string name, json_path;
  bool short_run = false;
  std::uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--short") {
      short_run = true;
    } else if ((a == "--scenario" || a == "--seed" || a == "--json") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--scenario") name = v;
      else if (a == "--json") json_path = v;
      else {
        char* end = nullptr;
        seed = std::strtoull(v.c_str(), &end, 10);
        if (v.empty() || *end) return usage(("--seed " + v + ": not a whole number").c_str());
      }
    } else {
      return usage(("unknown argument " + a).c_str());
    }
  }
  Scenario scenario;
  if (name == "llama3") scenario = llama3(short_run);
  else if (name == "mixed") scenario = mixed(short_run);
  else if (name == "meta") scenario = meta_model();
  else return usage(name.empty() ? "--scenario is required" : ("no scenario " + name).c_str());

  auto began = std::chrono::steady_clock::now();
  std::printf("scenario %s: %d nodes x %d GPUs, %.0f days, seed %llu\n", scenario.name.c_str(), scenario.nodes,
              scenario.gpus_per_node, scenario.days, static_cast<unsigned long long>(seed));
  std::printf("%-7s %5s %6s %6s %7s %8s %6s %11s %9s %9s %10s %6s\n", "policy", "ckpt", "spares", "ETTR", "cluster",
              "restarts", "human", "lost GPU-h", "MTTR p50", "MTTR p90", "wait nodes", "lemons");
  json_t* results = json_array();
  json_t* traces = json_array();
  std::vector<SimResult> all;
  for (int spares : scenario.spares) {
    Trace trace = draw_trace(scenario, spares, seed);
    json_t* t = json_object();
    json_object_set_new(t, "spares", json_integer(spares));
    json_object_set_new(t, "digest", digest_json(trace.digest));
    json_object_set_new(t, "faults", json_integer(static_cast<json_int_t>(trace.faults.size())));
    json_object_set_new(t, "jobs", json_integer(static_cast<json_int_t>(trace.jobs.size())));
    json_array_append_new(traces, t);
    for (int interval : scenario.ckpt_intervals_min) {
      for (Policy p : {Policy::plain, Policy::primus, Policy::safe}) {
        SimResult r = simulate(scenario, trace, {p, interval, spares});
        std::printf("%-7s %4dm %6d %6.3f %7.3f %8d %6d %11.0f %8.0fs %8.0fs %9.1fh %6d\n", to_string(p).c_str(),
                    interval, spares, r.ettr, r.cluster_goodput, r.restarts, r.human_resubmits, hours(r.time.lost()), percentile(r.mttr_s, 0.5),
                    percentile(r.mttr_s, 0.9), r.waiting_for_nodes_s / 3600, r.quarantines);
        json_array_append_new(results, result_json(r, trace.digest));
        all.push_back(std::move(r));
      }
    }
  }

  // Where the time went, for each policy at the scenario's middle setting.
  const SimResult* mid = &all[all.size() / 2];
  std::printf("\nlost GPU-hours by cause (ckpt %d min, %d spares):\n", mid->settings.ckpt_interval_min,
              mid->settings.spares);
  std::vector<const SimResult*> same;
  for (const SimResult& r : all)
    if (r.settings.ckpt_interval_min == mid->settings.ckpt_interval_min && r.settings.spares == mid->settings.spares)
      same.push_back(&r);
  std::vector<std::string> causes;
  for (const SimResult* r : same)
    for (const auto& [c, s] : r->time.lost_by_cause)
      if (std::find(causes.begin(), causes.end(), c) == causes.end()) causes.push_back(c);
  std::printf("  %-40s", "cause");
  for (const SimResult* r : same) std::printf(" %10s", to_string(r->settings.policy).c_str());
  std::printf("\n");
  for (const std::string& c : causes) {
    std::printf("  %-40.40s", c.c_str());
    for (const SimResult* r : same) {
      auto it = r->time.lost_by_cause.find(c);
      std::printf(" %10.0f", it == r->time.lost_by_cause.end() ? 0.0 : hours(it->second));
    }
    std::printf("\n");
  }
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  std::printf("\n%zu runs in %.1f s\n", all.size(), took);

  if (!json_path.empty()) {
    json_t* doc = json_object();
    json_object_set_new(doc, "scenario", json_string(scenario.name.c_str()));
    json_object_set_new(doc, "short", json_boolean(short_run));
    json_object_set_new(doc, "seed", json_integer(static_cast<json_int_t>(seed)));
    json_object_set_new(doc, "days", json_real(scenario.days));
    json_object_set_new(doc, "nodes", json_integer(scenario.nodes));
    json_object_set_new(doc, "gpus_per_node", json_integer(scenario.gpus_per_node));
    json_object_set_new(doc, "traces", traces);
    json_object_set_new(doc, "results", results);
    json_object_set_new(doc, "seconds", json_real(took));
    if (json_dump_file(doc, json_path.c_str(), JSON_INDENT(1) | JSON_SORT_KEYS) != 0) {
      std::fprintf(stderr, "safe-goodput-sim: cannot write %s\n", json_path.c_str());
      json_decref(doc);
      return 1;
    }
    json_decref(doc);
  } else {
    json_decref(traces);
    json_decref(results);
  }
  return 0;
}
