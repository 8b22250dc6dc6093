#include "kube-bridge/kube_attempt.hpp"

#include <algorithm>

namespace safe::bridge {
namespace {

// The scheduler evicting a pod for a higher-priority one is a preemption, as on Slurm; every
// other disruption (taint manager, kubelet, pod GC, eviction API) takes the node away.
constexpr std::string_view kPreemptionReason = "PreemptionByScheduler";

bool preempted(const PodObservation& pod) { return pod.disruption && *pod.disruption == kPreemptionReason; }

// The node faults one pod shows, as the classifier's NodeFault rows (kind, then detail).
void add_node_faults(const PodObservation& pod, std::vector<NodeFault>& out) {
  if (pod.phase == "Succeeded" || pod.node.empty()) return;
  if (pod.node_mark)
    out.push_back({pod.node, "safe_mark", "SaFE: unhealthy" + (pod.node_mark->empty() ? "" : " (" + *pod.node_mark + ")")});
  if (pod.node_not_ready) out.push_back({pod.node, "not_ready", "NotReady (pod " + pod.name + ")"});
  if (pod.disruption && !preempted(pod))
    out.push_back({pod.node, "disruption",
                   "pod " + pod.name + " DisruptionTarget" + (pod.disruption->empty() ? "" : " (" + *pod.disruption + ")")});
  // Failed before its container ran (the kubelet refused it, e.g. no GPU device left): the node's.
  if (pod.phase == "Failed" && !pod.exit_code && !pod.disruption)
    out.push_back({pod.node, "not_started", "pod " + pod.name + " failed before its container started"});
}

}  // namespace

std::string_view to_string(KubeAction action) {
  switch (action) {
    case KubeAction::wait: return "wait";
    case KubeAction::succeeded: return "succeeded";
    case KubeAction::failover: return "failover";
    case KubeAction::fail: return "fail";
  }
  return "wait";
}

std::optional<JobFailure> kube_attempt_failure(const std::vector<PodObservation>& pods, const JobObservation& job) {
  JobFailure f;
  for (const auto& pod : pods) add_node_faults(pod, f.node_faults);
  // The first container to fail is the cause; the others mostly fail because it did.
  const PodObservation* first = nullptr;
  for (const auto& pod : pods) {
    if (pod.phase != "Failed" || !pod.exit_code) continue;
    if (!first || pod.finished_at < first->finished_at || (pod.finished_at == first->finished_at && pod.name < first->name))
      first = &pod;
  }
  bool any_preempted = std::any_of(pods.begin(), pods.end(), preempted);
  bool any_failed = std::any_of(pods.begin(), pods.end(), [](const auto& p) { return p.phase == "Failed"; });
  if (job.gone) {
    f.end = JobEnd::cancelled;  // someone deleted the Job: as scancel on Slurm
  } else if (job.deadline_exceeded) {
    f.end = JobEnd::timeout;
  } else if (any_preempted) {
    f.end = JobEnd::preempted;
  } else if (first) {
    f.end = first->termination_reason == "OOMKilled" ? JobEnd::out_of_memory : JobEnd::failed;
    f.exit_code = *first->exit_code;
  } else if (any_failed) {
    f.end = JobEnd::failed;  // failed before running: its node fault (not_started) says why
  } else if (!f.node_faults.empty()) {
    f.end = JobEnd::running_on_bad_node;
  } else {
    return std::nullopt;
  }
  return f;
}

KubeDecision decide_kube_attempt(const std::vector<PodObservation>& pods, const JobObservation& job, int completions,
                                 int attempt, int max_retries, const FailoverConfig& failover) {
  int done = 0;
  for (const auto& pod : pods) done += pod.phase == "Succeeded";
  if (completions > 0 && done >= completions)
    return {KubeAction::succeeded, {}, "all " + std::to_string(done) + " pods succeeded"};
  std::optional<JobFailure> failure = kube_attempt_failure(pods, job);
  if (!failure) return {};
  return decide_kube_failure(*failure, attempt, max_retries, failover);
}

KubeDecision decide_kube_failure(const JobFailure& failure, int attempt, int max_retries, const FailoverConfig& failover) {
  KubeDecision d;
  d.classification = classify_failure(failure, failover);
  const std::string cls(to_string(d.classification.failure_class));
  d.message = cls + " (" + d.classification.rule + "): " + d.classification.evidence;
  int used = attempt - 1;
  if (!is_retried(d.classification.failure_class, failover)) {
    d.action = KubeAction::fail;
    d.message += "; not retried: " + cls + " is not in failover.retry_classes";
  } else if (used >= max_retries) {
    d.action = KubeAction::fail;
    d.message += "; not retried: retries exhausted (" + std::to_string(used) + "/" + std::to_string(max_retries) + ")";
  } else {
    d.action = KubeAction::failover;
  }
  return d;
}

}  // namespace safe::bridge
