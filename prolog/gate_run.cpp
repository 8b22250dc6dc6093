#include "prolog/gate_run.hpp"

#include <syslog.h>

#include <charconv>
#include <ctime>
#include <sstream>

#include "common/drain_decision.hpp"
#include "common/sim_gpu_file.hpp"
#include "healthcheck/gpu_collector.hpp"
#include "prolog/gpu_gate.hpp"
#include "prolog/job_evidence.hpp"
#include "prolog/stray_cleanup.hpp"

namespace safe {
namespace {

std::string get(const std::map<std::string, std::string>& env, const char* key) {
  auto it = env.find(key);
  return it == env.end() ? "" : it->second;
}

std::string_view outcome_name(GpuQuery::Outcome o) {
  switch (o) {
    case GpuQuery::Outcome::ok: return "ok";
    case GpuQuery::Outcome::timed_out: return "timed_out";
    case GpuQuery::Outcome::failed: return "failed";
    case GpuQuery::Outcome::no_backend: return "no_backend";
  }
  return "?";
}

// The drain protocol for the gate: read the node first; drain only when its reason is empty or ours.
std::string drain_for(const GateOptions& o, SlurmNodeControl& slurm, const CheckResult& cause, std::ostream& log,
                      const char* component) {
  if (!o.use_slurm) return "none";
  Result<NodeStatus> read = slurm.read(o.node);
  std::optional<NodeStatus> status;
  if (read) status = *read;
  RunVerdict verdict;
  verdict.drain_cause = cause;
  DrainDecision decision = decide_drain(status, verdict, false);
  if (!read) decision.why += ": " + read.error();
  if (decision.action != NodeAction::drain) {
    log << component << ": " << o.node << ": not draining: " << decision.why << "\n";
    return "none";
  }
  if (Status drained = slurm.drain(o.node, decision.reason); !drained) {
    log << component << ": " << o.node << ": drain failed: " << drained.error() << " (check SLURM_CONF and slurmctld)\n";
    return "drain-failed";
  }
  log << component << ": " << o.node << ": drained: " << decision.reason << "\n";
  syslog(LOG_WARNING, "%s: %s: drained: %s", component, o.node.c_str(), decision.reason.c_str());
  return "drain";
}

GpuQuery query(const GateOptions& o, ProcessRunner& runner) {
  return query_gpus(runner, {o.self_exe, o.config_path, o.node, o.fs.root()},
                    std::chrono::seconds(o.config.health.gate_timeout_s));
}

// Which run of the job this is (SLURM_JOB_RESTART_COUNT); -1 when Slurm did not say.
int restart_count(const std::map<std::string, std::string>& env) {
  std::string text = get(env, "SLURM_JOB_RESTART_COUNT");
  int n = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  return ec == std::errc() && end == text.data() + text.size() && n >= 0 ? n : -1;
}

std::vector<int> job_gpus(const GateOptions& o, std::ostream& log, const char* component) {
  std::string text = get(o.env, "SLURM_JOB_GPUS");
  auto gpus = parse_job_gpus(text);
  if (!gpus) {
    log << component << ": SLURM_JOB_GPUS='" << text << "' is not a GPU list: gating no GPU\n";
    return {};
  }
  return *gpus;
}

// Only the job's own --safe-health=strict objects (warnings every other job tolerates): the job is
// refused, the node stays in service. Failing the prolog would make Slurm drain the node, so the
// prolog puts the job back itself: a batch job is requeued (safed then starts it elsewhere at
// once, without spending a retry, as for any refusal); an interactive one, which Slurm cannot
// requeue, is cancelled. The evidence is written first, for safed.
int refuse_without_drain(const GateOptions& o, SlurmNodeControl& slurm, JobEvidence& e, const GateResult& gate,
                         std::ostream& log) {
  Status written = e.job_id.empty() ? ok_status() : write_evidence(o.config.health.state_dir, e);
  if (!written) log << "safe-prolog: cannot write evidence: " << written.error() << "\n";
  std::ostringstream refused;
  refused << "safe-prolog: " << o.node << ": job " << e.job_id << " refused by its --safe-health=strict: "
          << gate.blocking.front().detail << " (the node stays in service)";
  if (!o.use_slurm || e.job_id.empty()) {
    log << refused.str() << "\n";
    return 0;
  }
  Status requeued = slurm.requeue_job(e.job_id);
  Status cancelled = requeued ? ok_status() : slurm.cancel_job(e.job_id);
  if (requeued) {
    refused << "; requeued";
  } else if (cancelled) {
    refused << "; cancelled (not a batch job: " << requeued.error() << ")";
  } else {
    refused << "; could neither requeue (" << requeued.error() << ") nor cancel it (" << cancelled.error() << "): it runs";
  }
  log << refused.str() << "\n";
  syslog(LOG_WARNING, "%s", refused.str().c_str());
  return 0;
}

}  // namespace

std::map<std::string, std::string> environment_map(char** envp) {
  std::map<std::string, std::string> env;
  for (char** e = envp; e && *e; ++e) {
    std::string entry = *e;
    std::size_t eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

int run_prolog(const GateOptions& o, ProcessRunner& runner, SlurmNodeControl& slurm, std::ostream& log) {
  HealthLevel level = job_health_level(o.env, o.config);
  if (level == HealthLevel::off) return 0;
  std::vector<int> gpus = job_gpus(o, log, "safe-prolog");
  if (gpus.empty()) return 0;  // a job without GPUs has nothing to gate
  GpuQuery q = query(o, runner);
  GateResult gate = evaluate_gate(q, o.config.health, gpus, level);
  if (q.outcome == GpuQuery::Outcome::timed_out || q.outcome == GpuQuery::Outcome::failed)
    log << "safe-prolog: " << o.node << ": GPU state unknown (" << q.detail << "): letting job "
        << get(o.env, "SLURM_JOB_ID") << " start\n";
  if (gate.pass) return 0;

  JobEvidence e;
  e.job_id = get(o.env, "SLURM_JOB_ID");
  e.node = o.node;
  e.stage = "prolog";
  e.restart_count = restart_count(o.env);
  e.time = static_cast<long long>(std::time(nullptr));
  e.health_level = std::string(to_string(level));
  e.gpus = gpus;
  e.gpu_query = std::string(outcome_name(q.outcome));
  e.failing = gate.blocking;
  e.action = gate.drain ? "refuse" : "refuse-job";
  e.reason = own_reason(gate.blocking.front().detail);
  if (!gate.drain) return refuse_without_drain(o, slurm, e, gate, log);
  // The evidence is on disk before the drain: safed, seeing the job on a freshly drained node,
  // must already know the prolog refused it (no failover: Slurm requeues it, and it costs the job
  // no retry). Written again below with what the drain did.
  Status written = e.job_id.empty() ? ok_status() : write_evidence(o.config.health.state_dir, e);
  if (!written) log << "safe-prolog: cannot write evidence: " << written.error() << "\n";
  e.action = drain_for(o, slurm, gate.blocking.front(), log, "safe-prolog");
  std::ostringstream refused;
  refused << "safe-prolog: " << o.node << ": job " << e.job_id << " refused: " << gate.blocking.front().detail
          << " (Slurm requeues it on another node)";
  log << refused.str() << "\n";
  syslog(LOG_WARNING, "%s", refused.str().c_str());  // slurmd keeps no prolog output
  if (!e.job_id.empty() && written) {
    Status again = write_evidence(o.config.health.state_dir, e);
    if (!again) log << "safe-prolog: cannot write evidence: " << again.error() << "\n";
  }
  return 1;
}

int run_epilog(const GateOptions& o, ProcessRunner& runner, SlurmNodeControl& slurm, std::ostream& log,
               const KillFunction& kill_process) {
  std::vector<int> gpus = job_gpus(o, log, "safe-epilog");
  JobEvidence e;
  e.job_id = get(o.env, "SLURM_JOB_ID");
  e.node = o.node;
  e.stage = "epilog";
  e.time = static_cast<long long>(std::time(nullptr));
  e.health_level = std::string(to_string(job_health_level(o.env, o.config)));
  e.gpus = gpus;
  e.action = "none";
  GpuQuery q;
  if (!gpus.empty()) q = query(o, runner);
  e.gpu_query = gpus.empty() ? "skipped" : std::string(outcome_name(q.outcome));

  if (q.outcome == GpuQuery::Outcome::ok) {
    std::vector<int> strays = processes_on(q.snapshot, gpus);
    if (!strays.empty()) {
      if (q.snapshot.backend == "sim") {
        // Simulated processes have no PIDs to kill: the cleanup empties them from the sim file.
        std::string path = sim_file_path(o.config.health.sim_dir, o.node);
        auto s = load_sim_file(path, static_cast<int>(q.snapshot.gpus.size()));
        if (s) clear_sim_processes(*s, gpus);
        Status cleaned = s ? save_sim_file(path, *s) : Status(Error{s.error()});
        if (cleaned) e.stray_pids_killed = strays;
        else log << "safe-epilog: cannot clean the simulated processes: " << cleaned.error() << "\n";
      } else {
        long long uid = std::atoll(get(o.env, "SLURM_JOB_UID").c_str());
        for (int pid : killable(o.fs, strays, get(o.env, "SLURM_JOB_UID").empty() ? -1 : uid))
          if (kill_process(pid, uid)) e.stray_pids_killed.push_back(pid);
      }
      clear_sim_processes(q.snapshot, gpus);  // judged below as after the cleanup
      log << "safe-epilog: " << o.node << ": job " << e.job_id << ": killed " << e.stray_pids_killed.size() << " of "
          << strays.size() << " processes left on its GPUs\n";
    }
  }
  if (!gpus.empty()) {
    GateResult gate = evaluate_gate(q, o.config.health, gpus, HealthLevel::standard);
    for (const auto& r : gate.results)
      if (r.status == CheckStatus::fail) e.failing.push_back(r);
    if (!gate.pass) {
      e.action = drain_for(o, slurm, gate.blocking.front(), log, "safe-epilog");
      e.reason = own_reason(gate.blocking.front().detail);
    }
  }
  // Only findings are recorded: a clean epilog tells safed nothing, and a record per job would
  // pile up on a busy cluster.
  if (!e.job_id.empty() && worth_recording(e)) {
    Status written = write_evidence(o.config.health.state_dir, e);
    if (!written) log << "safe-epilog: cannot write evidence: " << written.error() << " (check health.state_dir)\n";
  }
  return 0;
}

}  // namespace safe
