#include "kube-bridge/workload_view.hpp"

#include "common/job_metadata.hpp"

namespace safe::bridge {

json_t* time_json(std::time_t t) {
  if (t <= 0) return json_null();
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return json_string(buf);
}

WorkloadView slurm_workload_view(const SlurmJob& job, const BridgeRecord& record, const std::string& user) {
  WorkloadView v;
  v.id = slurm_workload_id(job.id);
  v.name = job.name;
  v.target = "slurm";
  v.user = user;
  v.uid = job.user_id;
  auto meta = parse_job_metadata(job.admin_comment);
  if (meta) {
    v.workspace = meta->settings.workspace;
    v.max_retries = meta->settings.retries;
    v.health = std::string(to_string(meta->settings.health));
    v.checkpoint_dir = meta->settings.ckpt_dir;
  }
  v.phase = workload_phase(job);
  v.attempt = job.restart_count + 1;
  v.nodes = job.nodes;
  v.node_count = static_cast<int>(job.num_nodes);
  v.excluded_nodes = job.exc_nodes;
  v.submit_time = job.submit_time;
  WorkloadView::SlurmDetails s;
  s.state = std::string(shown_state(job));
  s.reason = job.reason;
  if (has_ended(job)) {
    s.exit_code = shell_exit_status(job.exit_code);
    s.end_time = job.end_time;
  }
  if (!waiting_to_start(job)) s.start_time = job.start_time;
  v.slurm = s;
  v.labels = record.labels;
  return v;
}

WorkloadView kube_workload_view(const KubeWorkload& w) {
  WorkloadView v;
  v.id = "kube-" + w.spec.name;
  v.name = w.spec.name;
  v.target = "kubernetes";
  v.user = w.user;
  v.uid = w.uid;
  v.workspace = w.settings.workspace;
  v.phase = w.phase;
  v.attempt = w.attempt;
  v.max_retries = w.settings.retries;
  v.health = std::string(to_string(w.settings.health));
  v.checkpoint_dir = w.settings.ckpt_dir;
  v.nodes = w.nodes;
  v.node_count = w.spec.nodes;
  for (const auto& n : w.avoid_nodes) v.excluded_nodes += (v.excluded_nodes.empty() ? "" : ",") + n;
  v.submit_time = w.submit_time;
  v.labels = w.spec.labels;
  return v;
}

Json render_workload(const WorkloadView& v) {
  Json j = json_take(json_object());
  json_t* w = j.get();
  json_set(w, "id", json_str(v.id));
  json_set(w, "name", json_str(v.name));
  json_set(w, "target", json_str(v.target));
  json_set(w, "user", json_str(v.user));
  json_set(w, "workspace", v.workspace.empty() ? json_null() : json_str(v.workspace));
  json_set(w, "phase", json_str(to_string(v.phase)));
  if (v.slurm) {
    json_set(w, "slurmState", json_str(v.slurm->state));
    json_set(w, "reason", json_str(v.slurm->reason));
  }
  json_set(w, "attempt", json_integer(v.attempt));
  json_set(w, "maxRetries", v.max_retries ? json_integer(*v.max_retries) : json_null());
  json_set(w, "health", v.health ? json_str(*v.health) : json_null());
  json_set(w, "checkpointDir", v.checkpoint_dir.empty() ? json_null() : json_str(v.checkpoint_dir));
  json_set(w, "nodes", json_str(v.nodes));
  json_set(w, "nodeCount", json_integer(v.node_count));
  json_set(w, "excludedNodes", json_str(v.excluded_nodes));
  if (v.slurm) json_set(w, "exitCode", v.slurm->exit_code ? json_integer(*v.slurm->exit_code) : json_null());
  json_set(w, "submitTime", time_json(v.submit_time));
  if (v.slurm) {
    json_set(w, "startTime", time_json(v.slurm->start_time));
    json_set(w, "endTime", time_json(v.slurm->end_time));
  }
  json_t* labels = json_object();
  for (const auto& [k, value] : v.labels) json_set(labels, k.c_str(), json_str(value));
  json_set(w, "labels", labels);
  return j;
}

json_t* render_event(const WorkloadEvent& e) {
  json_t* j = json_object();
  json_set(j, "type", json_str(e.type));
  json_set(j, "time", time_json(e.time));
  json_set(j, "attempt", json_integer(e.attempt));
  json_set(j, "message", json_str(e.message));
  return j;
}

std::vector<WorkloadEvent> slurm_events(const SlurmJob& job) {
  std::vector<WorkloadEvent> events;
  int attempt = job.restart_count + 1;
  events.push_back({"Submitted", job.submit_time, 1, "submitted to Slurm as job " + std::to_string(job.id)});
  auto meta = parse_job_metadata(job.admin_comment);
  if (job.restart_count > 0) {
    std::string why = meta && !meta->last_failure.empty() ? ": " + meta->last_failure : "";
    events.push_back({"Requeued", 0, attempt, "requeued " + std::to_string(job.restart_count) + " time(s)" + why});
  }
  if (!waiting_to_start(job) && job.start_time > 0)
    events.push_back({"Started", job.start_time, attempt, "running on " + job.nodes});
  if (has_ended(job)) {
    std::string msg = std::string(shown_state(job)) + ", exit code " + std::to_string(shell_exit_status(job.exit_code));
    if (!job.reason.empty()) msg += " (" + job.reason + ")";
    events.push_back({std::string(to_string(workload_phase(job))), job.end_time, attempt, msg});
  }
  return events;
}

std::vector<WorkloadEvent> kube_events(const KubeWorkload& w) {
  std::vector<WorkloadEvent> events;
  for (const auto& e : w.events) events.push_back({e.type, e.time, e.attempt, e.message});
  return events;
}

}  // namespace safe::bridge
