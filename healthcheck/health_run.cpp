#include "healthcheck/health_run.hpp"

#include <fcntl.h>
#include <jansson.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/json_utf8.hpp"
#include "common/json_value.hpp"
#include "common/prometheus_text.hpp"
#include "common/result.hpp"
#include "common/unique_fd.hpp"
#include "healthcheck/host_checks.hpp"
#include "healthcheck/hwloc_numa.hpp"
#include "healthcheck/kmsg_check.hpp"
#include "healthcheck/timed_task.hpp"

namespace safe {
namespace {

using Clock = std::chrono::steady_clock;
using Results = std::vector<CheckResult>;

bool make_dirs(const std::string& path) {
  std::string partial;
  std::istringstream parts(path);
  std::string part;
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += "/" + part;
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

// The old file stays whole when the new one cannot be written (a full disk): a new name, then a
// rename. A partial new file is removed, not left to use up what space is left.
Status write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!fd) return Error{tmp + ": " + std::strerror(errno)};
  for (std::size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = tmp + ": " + std::strerror(n < 0 ? errno : ENOSPC);
      unlink(tmp.c_str());
      return Error{why};
    }
    done += static_cast<std::size_t>(n);
  }
  if (close(fd.release()) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return Error{why};
  }
  return ok_status();
}

// One instance per node at a time (NHC issue #104): an flock the kernel drops when we exit.
class RunLock {
 public:
  explicit RunLock(const std::string& path) : fd_(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ < 0) open_error_ = path + ": " + std::strerror(errno);
    held_ = fd_ >= 0 && flock(fd_, LOCK_EX | LOCK_NB) == 0;
  }
  ~RunLock() {
    if (fd_ >= 0) close(fd_);
  }
  bool held() const { return held_; }
  // Why the lock file could not be opened (a read-only state directory); "" when it could.
  const std::string& open_error() const { return open_error_; }

 private:
  int fd_;
  bool held_ = false;
  std::string open_error_;
};

Results unknown_results(std::initializer_list<const char*> names, Severity severity, bool urgent, const std::string& why) {
  Results r;
  for (const char* n : names) r.push_back(unknown(n, severity, urgent, why));
  return r;
}

bool disabled(const HealthConfig& h, const std::string& check) {
  return std::count(h.disabled_checks.begin(), h.disabled_checks.end(), check) > 0;
}

}  // namespace

RunReport run_health_once(const RunOptions& o, ProcessRunner& runner, SlurmNodeControl& slurm) {
  auto started = Clock::now();
  const HealthConfig& h = o.config.health;
  RunReport report;
  report.node = o.node;
  report.time = static_cast<long long>(std::time(nullptr));

  if (!make_dirs(h.state_dir)) {
    report.status = "not-run";
    report.exit_code = kExitNotRun;
    report.error = "cannot create " + h.state_dir + ": " + std::strerror(errno);
    return report;
  }
  std::string base = h.state_dir + "/" + o.node;
  RunLock lock(base + ".lock");
  if (!lock.held()) {
    report.status = "not-run";
    report.exit_code = kExitNotRun;
    report.error = lock.open_error().empty()
                       ? "another run for " + o.node + " is in progress (" + base + ".lock)"
                       : "cannot open its lock file " + lock.open_error() + " (check health.state_dir)";
    return report;
  }
  HealthHistory history;
  if (std::ifstream in(base + ".json"); in) {
    std::stringstream text;
    text << in.rdbuf();
    history = health_history_from_json(text.str());
  }
  report.startup_run = o.force_startup || (!o.slurmd_instance.empty() && o.slurmd_instance != history.slurmd_instance);
  if (!o.slurmd_instance.empty()) history.slurmd_instance = o.slurmd_instance;

  const auto check_timeout = std::chrono::seconds(h.check_timeout_s);
  const auto deadline = started + check_timeout + std::chrono::milliseconds(200);
  NodeFs fs = o.fs;
  HealthConfig hc = h;

  // Everything starts at once; each result is waited for only until the shared deadline.
  GpuChildArgs child{o.self_exe, o.config_path, o.node, fs.root()};
  ProcessRunner* runner_ptr = &runner;  // the runner outlives every wait below (waits end by the deadline)
  TimedTask<GpuQuery> gpu_task([runner_ptr, child, check_timeout] { return query_gpus(*runner_ptr, child, check_timeout); });
  bool read_slurm = o.use_slurm && !report.startup_run;
  SlurmNodeControl* slurm_ptr = &slurm;
  std::string node = o.node;
  struct StatusRead {
    std::optional<NodeStatus> status;
    std::string error;
  };
  std::optional<TimedTask<StatusRead>> status_task;
  if (read_slurm)
    status_task.emplace([slurm_ptr, node] {
      StatusRead r;
      auto read = slurm_ptr->read(node);
      if (read) r.status = *read;
      else r.error = read.error();
      return r;
    });
  TimedTask<Results> kmsg_task([fs, hc] { return run_kmsg_check(fs, hc.thresholds); });
  TimedTask<Results> host_task([fs, hc] { return Results{check_memory(fs, hc.min_memory_gib), check_ib_ports(fs, hc.ib_min_rate_gbps)}; });
  TimedTask<Results> mounts_task([fs, hc] { return Results{check_mounts(fs, hc.mounts)}; });
  bool numa_from_hwloc = !h.numa_reference.empty() && h.backend != GpuBackendKind::sim;
  std::optional<TimedTask<std::optional<NumaMap>>> numa_task;
  if (numa_from_hwloc)
    numa_task.emplace([]() -> std::optional<NumaMap> {
      auto map = hwloc_gpu_numa_map();
      if (!map) return std::nullopt;  // reported as "GPU topology unavailable"
      return *map;
    });

  Results results;
  std::optional<GpuQuery> gpu = gpu_task.wait_until(deadline);
  std::optional<StatusRead> status_read;
  if (status_task) status_read = status_task->wait_until(deadline);
  std::optional<NodeStatus> node_status = status_read ? status_read->status : std::nullopt;

  GpuCheckScope scope;
  if (node_status) scope.node_idle = node_status->idle();
  GpuQuery query;
  if (gpu) {
    query = *gpu;
  } else {
    query.outcome = GpuQuery::Outcome::timed_out;
    query.detail = "GPU task did not finish";
  }
  report.gpu_backend = query.outcome == GpuQuery::Outcome::ok ? query.snapshot.backend
                       : query.outcome == GpuQuery::Outcome::no_backend ? "none"
                                                                        : "unknown";
  for (auto& r : evaluate_gpu_checks(query, h, scope)) results.push_back(std::move(r));
  report.gpus = gpu_grid(query, h, scope);

  auto collect = [&](TimedTask<Results>& task, std::initializer_list<const char*> names, Severity sev, bool urgent) {
    if (auto r = task.wait_until(deadline)) results.insert(results.end(), r->begin(), r->end());
    else {
      auto u = unknown_results(names, sev, urgent, "check timed out after " + std::to_string(h.check_timeout_s) + " s");
      results.insert(results.end(), u.begin(), u.end());
    }
  };
  if (auto r = kmsg_task.wait_until(deadline)) {
    results.insert(results.end(), r->begin(), r->end());
  } else {
    results.push_back(unknown("kmsg_critical", Severity::critical, true, "kernel log read timed out"));
    results.push_back(unknown("kmsg_warning", Severity::warning, false, "kernel log read timed out"));
  }
  collect(host_task, {"memory", "ib_ports"}, Severity::critical, false);
  collect(mounts_task, {"mounts"}, Severity::critical, false);

  if (h.numa_reference.empty()) {
    results.push_back(passed("numa_locality", Severity::critical, false, "not checked"));
  } else {
    Result<NumaMap> reference = Error{"cannot read " + h.numa_reference};
    if (std::ifstream in(h.numa_reference); in) {
      std::stringstream text;
      text << in.rdbuf();
      reference = parse_numa_reference(text.str());
    }
    std::optional<NumaMap> actual;
    if (numa_task) {
      if (auto m = numa_task->wait_until(deadline)) actual = *m;
    } else if (query.outcome == GpuQuery::Outcome::ok) {
      actual = numa_map_from_snapshot(query.snapshot);
    }
    if (!reference)
      results.push_back(unknown("numa_locality", Severity::critical, false, h.numa_reference + ": " + reference.error()));
    else if (!actual) results.push_back(unknown("numa_locality", Severity::critical, false, "GPU topology unavailable"));
    else results.push_back(compare_numa(*reference, *actual));
  }

  results.erase(std::remove_if(results.begin(), results.end(), [&](const CheckResult& r) { return disabled(h, r.check); }),
                results.end());

  HysteresisPolicy policy{h.fail_runs_before_drain, h.critical_fail_runs_before_drain, h.pass_runs_before_resume,
                          h.unknown_runs_before_fail};
  report.verdict = apply_run(history, results, policy);
  report.results = report.verdict.effective;
  history.last_run = report.time;

  if (!o.use_slurm) {
    report.decision = {NodeAction::none, {}, "report only (--no-slurm)"};
  } else {
    report.decision = decide_drain(node_status, report.verdict, report.startup_run);
    if (read_slurm && !node_status)
      report.decision.why += status_read ? ": " + status_read->error : ": scontrol did not answer in time";
    // The reason read at the start of the run may have changed since: safed puts a quarantine
    // back over a "SaFE:" drain within a second. Resume only a drain that is still this checker's.
    if (report.decision.action == NodeAction::resume) {
      Result<NodeStatus> now = slurm.read(o.node);
      report.decision = now ? decide_drain(*now, report.verdict, report.startup_run)
                            : DrainDecision{NodeAction::none, {}, "not resumed: " + now.error()};
    }
  }
  Status acted = report.decision.action == NodeAction::drain    ? slurm.drain(o.node, report.decision.reason)
                 : report.decision.action == NodeAction::resume ? slurm.resume(o.node)
                                                                : ok_status();
  report.action_ok = acted.ok();
  report.action_error = acted.error();

  if (report.verdict.drain_cause || !report.verdict.pending.empty()) {
    report.status = report.verdict.drain_cause ? "unhealthy" : "failing";
    report.exit_code = kExitCritical;
  } else if (!report.verdict.warnings.empty()) {
    report.status = "suspect";
    report.exit_code = kExitSuspect;
  } else {
    report.status = "healthy";
  }
  report.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  Status saved = write_atomically(base + ".json", to_json(history));
  if (!saved) report.state_error = saved.error();
  // The report of the run goes on: a history that cannot be saved is no fault of the node.
  if (Status written = write_atomically(base + ".last.json", report_json(report)); saved && !written)
    report.state_error = written.error();
  // node_exporter reads the file while it is replaced: write_atomically renames a complete one
  // over it. A node without node_exporter has no such directory, and nothing to report.
  if (!h.metrics_dir.empty() && std::filesystem::is_directory(h.metrics_dir))
    if (Status written = write_atomically(h.metrics_dir + "/safe-healthcheck-" + o.node + ".prom", report_metrics(report));
        !written)
      report.metrics_error = written.error();
  return report;
}

std::string summary_line(const RunReport& r) {
  std::ostringstream s;
  s << "safe-healthcheck: " << r.node << ": ";
  if (r.status == "not-run") {
    s << "not run: " << r.error;
    return s.str();
  }
  int pass = 0, fail = 0, unk = 0;
  for (const auto& c : r.results)
    (c.status == CheckStatus::pass ? pass : c.status == CheckStatus::fail ? fail : unk)++;
  s << r.status << " (" << pass << " pass, " << fail << " fail, " << unk << " unknown, " << static_cast<long long>(r.elapsed_ms)
    << " ms, gpu backend " << r.gpu_backend << ")";
  std::vector<std::string> problems;
  for (const auto& c : r.results)
    if (c.status == CheckStatus::fail) problems.push_back(std::string(to_string(c.severity)) + " " + c.check + ": " + c.detail);
  for (const auto& p : problems) s << "; " << p;
  if (!r.state_error.empty())
    s << "; history not saved: " << r.state_error
      << " (its fault and recovery counts do not advance until health.state_dir takes writes)";
  if (!r.metrics_error.empty()) s << "; metrics not written: " << r.metrics_error;
  if (r.decision.action != NodeAction::none) {
    s << "; " << to_string(r.decision.action) << (r.decision.reason.empty() ? "" : " \"" + r.decision.reason + "\"");
    if (!r.action_ok) s << " FAILED: " << r.action_error << " (check SLURM_CONF and that slurmctld answers)";
  } else if (!r.decision.why.empty()) {
    s << "; no action: " << r.decision.why;
  }
  return s.str();
}

std::string report_json(const RunReport& r) {
  Json owner(json_object());
  json_t* root = owner.get();
  json_object_set_new(root, "node", json_utf8(r.node));
  json_object_set_new(root, "time", json_integer(r.time));
  json_object_set_new(root, "status", json_utf8(r.status));
  json_object_set_new(root, "exit_code", json_integer(r.exit_code));
  json_object_set_new(root, "elapsed_ms", json_real(r.elapsed_ms));
  json_object_set_new(root, "gpu_backend", json_utf8(r.gpu_backend));
  json_object_set_new(root, "startup_run", json_boolean(r.startup_run));
  if (!r.error.empty()) json_object_set_new(root, "error", json_utf8(r.error));
  if (!r.state_error.empty()) json_object_set_new(root, "state_error", json_utf8(r.state_error));
  json_t* checks = json_array();
  for (const auto& c : r.results) {
    json_t* o = json_object();
    json_object_set_new(o, "check", json_utf8(c.check));
    json_object_set_new(o, "status", json_utf8(std::string(to_string(c.status))));
    json_object_set_new(o, "severity", json_utf8(std::string(to_string(c.severity))));
    json_object_set_new(o, "detail", json_utf8(c.detail));
    json_array_append_new(checks, o);
  }
  json_object_set_new(root, "checks", checks);
  std::string grid = to_json(NodeGpuReport{r.node, r.time, r.gpu_backend, r.gpus});
  json_object_set_new(root, "gpu_grid", json_loads(grid.c_str(), 0, nullptr));
  json_t* action = json_object();
  json_object_set_new(action, "action", json_utf8(std::string(to_string(r.decision.action))));
  json_object_set_new(action, "reason", json_utf8(r.decision.reason));
  json_object_set_new(action, "why", json_utf8(r.decision.why));
  json_object_set_new(action, "ok", json_boolean(r.action_ok));
  if (!r.action_error.empty()) json_object_set_new(action, "error", json_utf8(r.action_error));
  json_object_set_new(root, "action", action);
  return json_document(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
}

std::string report_metrics(const RunReport& r) {
  const std::string node = "node=\"" + prometheus_label_value(r.node) + "\"";
  std::ostringstream m;
  m << "# HELP safe_health_last_run_timestamp_seconds When safe-healthcheck last ran on the node.\n"
       "# TYPE safe_health_last_run_timestamp_seconds gauge\n"
    << "safe_health_last_run_timestamp_seconds{" << node << "} " << r.time << "\n"
    << "# HELP safe_health_run_duration_seconds How long the last run took.\n"
       "# TYPE safe_health_run_duration_seconds gauge\n"
    << "safe_health_run_duration_seconds{" << node << "} " << r.elapsed_ms / 1000.0 << "\n"
    << "# HELP safe_health_status 1 for the node's status after the last run (healthy, suspect, failing, "
       "unhealthy, not-run).\n# TYPE safe_health_status gauge\n";
  for (const char* status : {"healthy", "suspect", "failing", "unhealthy", "not-run"})
    m << "safe_health_status{" << node << ",status=\"" << status << "\"} " << (r.status == status ? 1 : 0) << "\n";
  m << "# HELP safe_health_check 1 for each check's result in the last run (after hysteresis).\n"
       "# TYPE safe_health_check gauge\n";
  for (const auto& c : r.results)
    for (auto status : {CheckStatus::pass, CheckStatus::fail, CheckStatus::unknown})
      m << "safe_health_check{" << node << ",check=\"" << prometheus_label_value(c.check) << "\",severity=\""
        << to_string(c.severity) << "\",status=\"" << to_string(status) << "\"} " << (c.status == status ? 1 : 0)
        << "\n";
  return m.str();
}

}  // namespace safe
