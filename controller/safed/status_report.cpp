#include "controller/safed/status_report.hpp"

#include <jansson.h>

#include <algorithm>
#include <array>
#include <memory>
#include <sstream>

#include "common/admission.hpp"
#include "common/json_utf8.hpp"
#include "common/json_value.hpp"
#include "common/prometheus_text.hpp"
#include "common/spare_reservation.hpp"
#include "controller/safed/history_report.hpp"

namespace safe {
namespace {

std::string dump(json_t* root) {
  Json owner(root);
  return json_document(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

json_t* job_json(const JobRecord& j) {
  json_t* o = json_object();
  json_object_set_new(o, "job_id", json_integer(j.job_id));
  json_object_set_new(o, "user_id", json_integer(j.user_id));
  json_object_set_new(o, "name", json_utf8(j.name));
  json_object_set_new(o, "workspace", json_utf8(j.workspace));
  json_object_set_new(o, "state", json_utf8(to_string(j.state)));
  json_object_set_new(o, "retries_used", json_integer(j.retries_used));
  json_object_set_new(o, "max_retries", json_integer(j.max_retries));
  json_object_set_new(o, "gpus", json_integer(j.gpus));
  json_object_set_new(o, "submit_time", json_integer(j.submit_time));
  json_object_set_new(o, "submitted", json_integer(j.submitted));
  json_object_set_new(o, "end_time", json_integer(j.end_time));
  json_object_set_new(o, "run_seconds", json_integer(j.run_seconds));
  json_object_set_new(o, "lost_seconds", json_integer(j.lost_seconds));
  json_object_set_new(o, "last_class", json_utf8(j.last_class));
  json_object_set_new(o, "last_evidence", json_utf8(j.last_evidence));
  return o;
}

}  // namespace

std::string workspace_label(const std::string& workspace) { return workspace.empty() ? "(none)" : workspace; }

std::map<std::string, WorkspaceTime> workspace_times(const FailoverPlanner& planner, long long now) {
  std::map<std::string, WorkspaceTime> out;
  for (const auto& [id, t] : planner.jobs()) {
    const JobRecord& r = t.record;
    if (!t.first_start) continue;  // it has not run yet: nothing gained or lost
    WorkspaceTime& w = out[r.workspace];
    double productive = static_cast<double>(r.run_seconds - r.lost_seconds);
    if (r.state == SafeJobState::running && t.attempt_start) productive += static_cast<double>(now - t.attempt_start);
    long long end = r.end_time ? r.end_time : now;
    w.productive_s += productive;
    w.wall_s += static_cast<double>(std::max<long long>(0, end - t.first_start));
  }
  return out;
}

std::string render_metrics(FailoverPlanner& planner, const ControllerHealth& health, long long now) {
  std::ostringstream m;
  const PlannerCounters& c = planner.counters();
  m << "# HELP safe_controller_up 1 when the last pass read Slurm successfully.\n# TYPE safe_controller_up gauge\n"
    << "safe_controller_up " << (health.slurm_ok ? 1 : 0) << "\n";
  m << "# HELP safe_controller_active 1 when this safed acts (the active instance, or the only one).\n"
       "# TYPE safe_controller_active gauge\n"
    << "safe_controller_active " << (health.role == "standby" ? 0 : 1) << "\n";
  m << "# HELP safe_journal_position The last entry of the replicated state store's journal this safed holds "
       "(controller.ha; 0 without).\n# TYPE safe_journal_position gauge\n"
    << "safe_journal_position " << health.journal_position << "\n";
  m << "# HELP safe_reconcile_duration_seconds Duration of the last reconcile pass.\n"
       "# TYPE safe_reconcile_duration_seconds gauge\n"
    << "safe_reconcile_duration_seconds " << health.last_pass_ms / 1000.0 << "\n";
  m << "# HELP safe_reconcile_passes_total Reconcile passes completed since safed started.\n"
       "# TYPE safe_reconcile_passes_total counter\n"
    << "safe_reconcile_passes_total " << health.passes << "\n";
  m << "# HELP safe_reconcile_failed_passes_total Reconcile passes rolled back (an error, or a state store that cannot be written: no action is taken then).\n"
       "# TYPE safe_reconcile_failed_passes_total counter\n"
    << "safe_reconcile_failed_passes_total " << health.failed_passes << "\n";
  m << "# HELP safe_slurmd_probe_targets Nodes whose slurmd the last probe round checked.\n"
       "# TYPE safe_slurmd_probe_targets gauge\n"
    << "safe_slurmd_probe_targets " << health.probe_targets << "\n"
    << "# HELP safe_slurmd_probe_round_seconds Duration of the last slurmd probe round.\n"
       "# TYPE safe_slurmd_probe_round_seconds gauge\n"
    << "safe_slurmd_probe_round_seconds " << health.probe_round_ms / 1000.0 << "\n"
    << "# HELP safe_nodes_set_down_total Nodes safed set DOWN because their slurmd stopped answering.\n"
       "# TYPE safe_nodes_set_down_total counter\n"
    << "safe_nodes_set_down_total " << health.nodes_downed << "\n"
    << "# HELP safe_nodes_resumed_total Nodes safed set DOWN and resumed once their slurmd answered again.\n"
       "# TYPE safe_nodes_resumed_total counter\n"
    << "safe_nodes_resumed_total " << health.nodes_resumed << "\n";
  m << "# HELP safe_job_failures_total Attempts of SaFE jobs that failed, by failure class.\n"
       "# TYPE safe_job_failures_total counter\n";
  for (auto cls : all_failure_classes()) {
    std::string name(to_string(cls));
    auto it = c.failures_by_class.find(name);
    m << "safe_job_failures_total{class=\"" << name << "\"} " << (it == c.failures_by_class.end() ? 0 : it->second) << "\n";
  }
  m << "# HELP safe_failovers_total Requeues SaFE made, by failure class (grow_back: an elastic job's planned "
       "restart back to its full size).\n# TYPE safe_failovers_total counter\n";
  std::vector<std::string> classes;
  for (auto cls : all_failure_classes()) classes.emplace_back(to_string(cls));
  classes.emplace_back(kGrowBackClass);
  for (const std::string& name : classes) {
    auto it = c.failovers_by_class.find(name);
    m << "safe_failovers_total{class=\"" << name << "\"} " << (it == c.failovers_by_class.end() ? 0 : it->second) << "\n";
  }
  m << "# HELP safe_elastic_shrinks_total Elastic jobs (--safe-min-nodes) restarted, or waiting to start, on fewer "
       "nodes than they were submitted for.\n# TYPE safe_elastic_shrinks_total counter\nsafe_elastic_shrinks_total "
    << c.elastic_shrinks << "\n";
  m << "# HELP safe_failovers_deferred_total Failovers delayed by the storm guards.\n"
       "# TYPE safe_failovers_deferred_total counter\n"
    << "safe_failovers_deferred_total{reason=\"rate_limit\"} " << c.deferred_rate_limit << "\n"
    << "safe_failovers_deferred_total{reason=\"backoff\"} " << c.deferred_backoff << "\n";
  m << "# HELP safe_failovers_refused_total Failures not retried because the job's retries were used up.\n"
       "# TYPE safe_failovers_refused_total counter\nsafe_failovers_refused_total "
    << c.refused_exhausted << "\n";
  // From a failover onto free nodes (seconds: 2-5 s on the local cluster) to one that waited for
  // the queue or a repair (hours).
  static constexpr std::array<double, 14> kBuckets{1, 2, 3, 5, 7.5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600};
  m << "# HELP safe_mttr_seconds Time from a fault to the job running again.\n# TYPE safe_mttr_seconds histogram\n";
  double sum = 0;
  for (double b : kBuckets) {
    long long n = 0;
    for (double s : c.mttr_samples) n += s <= b ? 1 : 0;
    m << "safe_mttr_seconds_bucket{le=\"" << b << "\"} " << n << "\n";
  }
  for (double s : c.mttr_samples) sum += s;
  m << "safe_mttr_seconds_bucket{le=\"+Inf\"} " << c.mttr_samples.size() << "\n"
    << "safe_mttr_seconds_sum " << sum << "\nsafe_mttr_seconds_count " << c.mttr_samples.size() << "\n";
  m << "# HELP safe_time_lost_seconds_total Seconds from faults to running again, per workspace.\n"
       "# TYPE safe_time_lost_seconds_total counter\n";
  for (const auto& [ws, s] : c.time_lost_by_workspace)
    m << "safe_time_lost_seconds_total{workspace=\"" << prometheus_label_value(workspace_label(ws)) << "\"} " << s << "\n";
  m << "# HELP safe_ettr Effective training time ratio per workspace: productive time (run time less the work "
       "failed attempts did after their newest checkpoint) / wall time since the job first ran.\n"
       "# TYPE safe_ettr gauge\n";
  for (const auto& [ws, w] : workspace_times(planner, now))
    m << "safe_ettr{workspace=\"" << prometheus_label_value(workspace_label(ws)) << "\"} " << w.ettr() << "\n";
  std::map<std::string, int> by_condition;
  for (auto cond : {NodeCondition::ok, NodeCondition::safe_drain, NodeCondition::quarantined, NodeCondition::down,
                    NodeCondition::admin_drain})
    by_condition[std::string(to_string(cond))] = 0;
  for (const auto& n : planner.nodes()) ++by_condition[std::string(to_string(node_condition(n)))];
  m << "# HELP safe_nodes Nodes by health state as SaFE sees them.\n# TYPE safe_nodes gauge\n";
  for (const auto& [cond, n] : by_condition) m << "safe_nodes{state=\"" << cond << "\"} " << n << "\n";
  m << "# HELP safe_node_quarantined 1 for each node SaFE quarantined.\n# TYPE safe_node_quarantined gauge\n";
  for (const auto& [node, q] : planner.quarantined()) m << "safe_node_quarantined{node=\"" << prometheus_label_value(node) << "\"} 1\n";
  m << "# HELP safe_quarantined_nodes Nodes in quarantine.\n# TYPE safe_quarantined_nodes gauge\n"
    << "safe_quarantined_nodes " << planner.quarantined().size() << "\n";
  const PlannerCounters& counters = planner.counters();
  m << "# HELP safe_spare_nodes Hot spare nodes by partition: free (healthy, idle, in the spare reservation), "
       "repairing (out of service, kept to come back as spares), wanted (failover.spares count).\n"
       "# TYPE safe_spare_nodes gauge\n";
  for (const auto& [partition, plan] : planner.spare_pools()) {
    std::string p = prometheus_label_value(partition);
    m << "safe_spare_nodes{partition=\"" << p << "\",state=\"free\"} " << plan.free.size() << "\n"
      << "safe_spare_nodes{partition=\"" << p << "\",state=\"repairing\"} " << plan.repairing.size() << "\n"
      << "safe_spare_nodes{partition=\"" << p << "\",state=\"wanted\"} " << plan.wanted << "\n";
  }
  m << "# HELP safe_spare_placements_total Failing-over jobs (and elastic jobs growing back) started on hot spares, by partition.\n"
       "# TYPE safe_spare_placements_total counter\n";
  for (const auto& [partition, plan] : planner.spare_pools()) {
    auto used = counters.spare_placements.find(partition);
    m << "safe_spare_placements_total{partition=\"" << prometheus_label_value(partition) << "\"} "
      << (used == counters.spare_placements.end() ? 0 : used->second) << "\n";
  }
  m << "# HELP safe_spare_idle_gpu_seconds_total GPU time free hot spares sat idle (the pool's cost), by partition.\n"
       "# TYPE safe_spare_idle_gpu_seconds_total counter\n";
  for (const auto& [partition, plan] : planner.spare_pools()) {
    auto idle = counters.spare_idle_gpu_seconds.find(partition);
    m << "safe_spare_idle_gpu_seconds_total{partition=\"" << prometheus_label_value(partition) << "\"} "
      << (idle == counters.spare_idle_gpu_seconds.end() ? 0.0 : idle->second) << "\n";
  }
  m << "# HELP safe_workspace_gpus GPUs of a workspace in use and its quota (Slurm licenses).\n"
       "# TYPE safe_workspace_gpus gauge\n";
  for (const auto& l : health.licenses) {
    if (l.name.rfind("safe_ws_", 0) != 0) continue;
    std::string ws = l.name.substr(8);
    m << "safe_workspace_gpus{workspace=\"" << prometheus_label_value(ws) << "\",kind=\"in_use\"} " << l.in_use << "\n"
      << "safe_workspace_gpus{workspace=\"" << prometheus_label_value(ws) << "\",kind=\"quota\"} " << l.total << "\n";
  }
  return m.str();
}

namespace {

// Each configured workspace: its quota, the GPUs its jobs hold (Slurm's license count), ETTR
// (null before any of its jobs ran) and the time its jobs lost to faults.
json_t* workspaces_json(FailoverPlanner& planner, const ControllerHealth& health, long long now) {
  json_t* workspaces = json_array();
  auto times = workspace_times(planner, now);
  for (const auto& w : planner.config().workspaces) {
    json_t* o = json_object();
    json_object_set_new(o, "name", json_utf8(w.name));
    json_object_set_new(o, "gpu_quota", json_integer(w.gpu_quota));
    long long in_use = 0;
    for (const auto& l : health.licenses)
      if (l.name == workspace_license(w.name)) in_use = l.in_use;
    json_object_set_new(o, "gpus_in_use", json_integer(in_use));
    auto t = times.find(w.name);
    json_object_set_new(o, "ettr", t == times.end() ? json_null() : json_real(t->second.ettr()));
    auto lost = planner.counters().time_lost_by_workspace.find(w.name);
    json_object_set_new(o, "time_lost_s",
                        json_real(lost == planner.counters().time_lost_by_workspace.end() ? 0 : lost->second));
    json_array_append_new(workspaces, o);
  }
  return workspaces;
}

}  // namespace

std::string render_status_json(FailoverPlanner& planner, const ControllerHealth& health, long long now,
                               std::optional<std::uint32_t> user) {
  json_t* root = json_object();
  json_t* ctl = json_object();
  json_object_set_new(ctl, "started", json_integer(health.started));
  json_object_set_new(ctl, "last_pass", json_integer(health.last_pass));
  json_object_set_new(ctl, "last_pass_ms", json_real(health.last_pass_ms));
  json_object_set_new(ctl, "slurm_ok", json_boolean(health.slurm_ok));
  json_object_set_new(ctl, "slurm_error", json_utf8(health.slurm_error));
  json_object_set_new(ctl, "role", json_utf8(health.role));
  json_object_set_new(ctl, "active_url", json_utf8(health.active_url));
  json_object_set_new(ctl, "config_sha256", json_utf8(health.config_sha256));
  json_object_set_new(ctl, "failovers_last_minute", json_integer(planner.rate_limit_used(now)));
  json_object_set_new(ctl, "rate_limit_per_minute", json_integer(planner.config().failover.rate_limit_per_minute));
  json_object_set_new(root, "controller", ctl);

  json_t* nodes = json_array();
  for (const auto& n : planner.nodes()) {
    json_t* o = json_object();
    json_object_set_new(o, "name", json_utf8(n.name));
    json_object_set_new(o, "health", json_string(std::string(to_string(node_condition(n))).c_str()));
    json_object_set_new(o, "reason", json_utf8(n.reason));
    json_object_set_new(o, "quarantined", json_boolean(planner.quarantined().count(n.name) > 0));
    json_array_append_new(nodes, o);
  }
  json_object_set_new(root, "nodes", nodes);

  json_t* quarantine = json_array();
  for (const auto& [node, q] : planner.quarantined()) {
    json_t* o = json_object();
    json_object_set_new(o, "node", json_utf8(node));
    json_object_set_new(o, "since", json_integer(q.since));
    json_object_set_new(o, "reason", json_utf8(q.reason));
    json_array_append_new(quarantine, o);
  }
  json_object_set_new(root, "quarantined", quarantine);

  json_t* spares = json_array();
  for (const auto& [partition, plan] : planner.spare_pools()) {
    json_t* o = json_object();
    json_object_set_new(o, "partition", json_utf8(partition));
    json_object_set_new(o, "reservation", json_utf8(spare_reservation_name(partition)));
    json_object_set_new(o, "wanted", json_integer(plan.wanted));
    auto names = [](const std::vector<std::string>& list) {
      json_t* a = json_array();
      for (const auto& n : list) json_array_append_new(a, json_utf8(n));
      return a;
    };
    json_object_set_new(o, "free", names(plan.free));
    json_object_set_new(o, "repairing", names(plan.repairing));
    std::vector<std::string> claimed;
    for (const auto& [id, claim] : planner.spare_claims())
      if (claim.partition == partition) claimed.insert(claimed.end(), claim.nodes.begin(), claim.nodes.end());
    json_object_set_new(o, "claimed", names(claimed));
    auto used = planner.counters().spare_placements.find(partition);
    json_object_set_new(o, "placements", json_integer(used == planner.counters().spare_placements.end() ? 0 : used->second));
    json_array_append_new(spares, o);
  }
  json_object_set_new(root, "spares", spares);

  json_object_set_new(root, "workspaces", workspaces_json(planner, health, now));

  json_t* jobs = json_array();
  std::vector<const TrackedJob*> sorted;
  for (const auto& [id, t] : planner.jobs())
    if (!user || t.record.user_id == *user) sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->record.job_id < b->record.job_id; });
  for (const TrackedJob* t : sorted) json_array_append_new(jobs, job_json(t->record));
  json_object_set_new(root, "jobs", jobs);
  return dump(root);
}

std::string render_workspaces_json(FailoverPlanner& planner, const ControllerHealth& health, long long now) {
  json_t* root = json_object();
  json_object_set_new(root, "items", workspaces_json(planner, health, now));
  return dump(root);
}

std::string render_jobs_json(StateStore& store, bool include_finished, std::optional<std::uint32_t> user) {
  json_t* root = json_object();
  json_t* jobs = json_array();
  for (const auto& j : store.jobs(include_finished, user)) json_array_append_new(jobs, job_json(j));
  json_object_set_new(root, "jobs", jobs);
  return dump(root);
}

std::string render_job_json(StateStore& store, std::uint32_t job_id, std::optional<long long> submitted,
                            std::optional<std::uint32_t> user) {
  std::optional<JobRecord> job;
  for (auto& j : store.jobs_with_id(job_id)) {
    if (submitted && j.submitted != *submitted) continue;
    if (user && j.user_id != *user) continue;
    job = std::move(j);
    break;
  }
  if (!job) return "";
  const JobKey key = job->key();
  json_t* root = job_json(*job);
  json_t* attempts = json_array();
  for (const auto& a : store.attempts(key)) {
    json_t* o = json_object();
    json_object_set_new(o, "attempt", json_integer(a.attempt + 1));
    json_object_set_new(o, "nodes", json_utf8(a.nodes));
    json_object_set_new(o, "start_time", json_integer(a.start_time));
    json_object_set_new(o, "end_time", json_integer(a.end_time));
    json_object_set_new(o, "end_state", json_utf8(a.end_state));
    json_object_set_new(o, "class", json_utf8(a.failure_class));
    json_object_set_new(o, "rule", json_utf8(a.rule));
    json_object_set_new(o, "evidence", json_utf8(a.evidence));
    json_array_append_new(attempts, o);
  }
  json_object_set_new(root, "attempts", attempts);
  json_t* failovers = json_array();
  for (const auto& f : store.failovers(key)) json_array_append_new(failovers, failover_json(f));
  json_object_set_new(root, "failovers", failovers);
  json_t* actions = json_array();
  for (const auto& a : store.actions(key)) {
    json_t* o = json_object();
    json_object_set_new(o, "time", json_integer(a.time));
    json_object_set_new(o, "action", json_utf8(a.action));
    json_object_set_new(o, "detail", json_utf8(a.detail));
    json_object_set_new(o, "ok", json_boolean(a.ok));
    json_array_append_new(actions, o);
  }
  json_object_set_new(root, "actions", actions);
  return dump(root);
}

}  // namespace safe
