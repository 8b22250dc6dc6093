// One attempt of a Kubernetes workload as SaFE's failure classifier sees it. What the bridge
// observes about the attempt's pods and their nodes is turned into the classifier's own input
// (common/failure_classification: JobFailure, with node faults and an end), so a workload on
// Kubernetes is classified and retried by exactly the table safed uses on Slurm
// (docs/failure-classification.md, "On Kubernetes").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/config.hpp"
#include "common/failure_classification.hpp"

namespace safe::bridge {

struct PodObservation {
  std::string name;
  std::string node;                 // empty while unscheduled
  std::string phase;                // Pending, Running, Succeeded, Failed, Unknown
  std::optional<int> exit_code;     // of the worker container, once terminated
  std::string termination_reason;   // the container's terminated.reason, e.g. OOMKilled
  std::string finished_at;          // the container's terminated.finishedAt (RFC 3339), for ordering
  bool node_not_ready = false;      // the node's Ready condition is False or Unknown, or the node is gone
  std::optional<std::string> disruption;  // the reason of a True DisruptionTarget condition
  std::optional<std::string> node_mark;   // the value of SaFE's unhealthy label or taint on the node
};

// What the attempt's Job says about itself.
struct JobObservation {
  bool gone = false;               // the Job was deleted outside SaFE (404)
  bool deadline_exceeded = false;  // condition Failed with reason DeadlineExceeded (activeDeadlineSeconds)
};

// How the attempt stands: running normally (nullopt), or ended / running on a faulty node (the
// classifier's input). Pods that Succeeded are never blamed on their node.
std::optional<JobFailure> kube_attempt_failure(const std::vector<PodObservation>& pods, const JobObservation& job = {});

enum class KubeAction { wait, succeeded, failover, fail };
std::string_view to_string(KubeAction action);

struct KubeDecision {
  KubeAction action = KubeAction::wait;
  Classification classification;  // set for failover and fail
  std::string message;            // for the workload's events
};

// attempt: 1 for the first run; max_retries: the workload's effective retries. failover: the
// cluster's failover section (infra_exit_codes, retry_classes), as safed reads it.
KubeDecision decide_kube_attempt(const std::vector<PodObservation>& pods, const JobObservation& job, int completions,
                                 int attempt, int max_retries, const FailoverConfig& failover);
// The same for a failure found another way (a hang): classified, then retried or not.
KubeDecision decide_kube_failure(const JobFailure& failure, int attempt, int max_retries, const FailoverConfig& failover);

}  // namespace safe::bridge
