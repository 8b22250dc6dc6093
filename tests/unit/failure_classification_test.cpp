// classify_failure, table-driven: each row is one situation the controller meets, on Slurm
// (safed) and on Kubernetes (the bridge's observations of an attempt's pods, kube_attempt).
#include <gtest/gtest.h>

#include <csignal>

#include "common/failure_classification.hpp"
#include "kube-bridge/kube_attempt.hpp"

namespace safe {
namespace {

struct ClassCase {
  const char* name;
  JobFailure failure;
  FailureClass expected;
  const char* evidence_part;  // must appear in the evidence
  bool retried;
};

const NodeFault kEcc{"n3", "safe_drain", "SaFE: gpu2 uncorrectable ECC=2"};
const NodeFault kDown{"n2", "down", "Not responding"};

JobFailure failed(int code, std::vector<NodeFault> faults = {}) {
  JobFailure f;
  f.end = JobEnd::failed;
  f.exit_code = code;
  f.node_faults = std::move(faults);
  return f;
}
JobFailure ended(JobEnd e, std::vector<NodeFault> faults = {}) {
  JobFailure f;
  f.end = e;
  f.node_faults = std::move(faults);
  return f;
}
// A job whose output says what Slurm would say: its words are shown, never believed.
JobFailure says_step_launch_failed() {
  JobFailure f = failed(1);
  f.user_evidence = "srun: error: Unable to create step for job 7: Invalid generic resource (gres) specification";
  return f;
}
JobFailure killed(int signo) {
  JobFailure f;
  f.end = JobEnd::failed;
  f.signal = signo;
  return f;
}
JobFailure hung() {
  JobFailure f;
  f.end = JobEnd::hung;
  f.hang_detail = "no output growth for 600 s";
  return f;
}

class ClassifyTest : public ::testing::TestWithParam<ClassCase> {};

TEST_P(ClassifyTest, ClassifiesWithEvidence) {
  const ClassCase& c = GetParam();
  FailoverConfig config;  // infra_exit_codes [75], retry node_fault + infra_transient
  Classification got = classify_failure(c.failure, config);
  EXPECT_EQ(to_string(c.expected), to_string(got.failure_class)) << got.rule;
  EXPECT_NE(got.evidence.find(c.evidence_part), std::string::npos) << got.evidence;
  EXPECT_EQ(c.retried, is_retried(got.failure_class, config));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ClassifyTest,
    ::testing::Values(
        ClassCase{"UserErrorOnHealthyNodes", failed(1), FailureClass::user_error, "exit code 1", false},
        ClassCase{"FailedOnFaultyNode", failed(1, {kEcc}), FailureClass::node_fault, "n3 SaFE: gpu2", true},
        ClassCase{"NodeFailWithEvidence", ended(JobEnd::node_fail, {kDown}), FailureClass::node_fault, "n2 Not responding", true},
        ClassCase{"NodeFailWithoutEvidence", ended(JobEnd::node_fail), FailureClass::node_fault, "NODE_FAIL", true},
        ClassCase{"BootFail", ended(JobEnd::boot_fail), FailureClass::node_fault, "BOOT_FAIL", true},
        ClassCase{"RequeuedBySlurmAfterNodeDeath", ended(JobEnd::requeued_by_slurm, {kDown}), FailureClass::node_fault, "n2", true},
        ClassCase{"RequeuedBySlurmNoFault", ended(JobEnd::requeued_by_slurm), FailureClass::unknown, "REQUEUED", false},
        ClassCase{"RefusedByProlog", ended(JobEnd::refused_by_prolog, {kEcc}), FailureClass::node_fault,
                  "n3 SaFE: gpu2 uncorrectable ECC=2 (refused by safe-prolog)", true},
        ClassCase{"RunningOnDrainedNode", ended(JobEnd::running_on_bad_node, {kEcc}), FailureClass::node_fault, "ECC", true},
        ClassCase{"InfraExitCode", failed(75), FailureClass::infra_transient, "exit code 75", true},
        ClassCase{"PrintedStepLaunchErrorIsOnlyUserEvidence", says_step_launch_failed(), FailureClass::user_error,
                  "exit code 1, no node fault seen; the job's output says: srun: error: Unable to create step", false},
        ClassCase{"Hang", hung(), FailureClass::infra_transient, "hang: no output", true},
        ClassCase{"Timeout", ended(JobEnd::timeout), FailureClass::timeout, "TIMEOUT", false},
        ClassCase{"TimeoutEvenWithNodeFault", ended(JobEnd::timeout, {kEcc}), FailureClass::timeout, "TIMEOUT", false},
        ClassCase{"Deadline", ended(JobEnd::deadline), FailureClass::timeout, "DEADLINE", false},
        ClassCase{"Cancelled", ended(JobEnd::cancelled), FailureClass::cancelled, "CANCELLED", false},
        ClassCase{"CancelledDespiteNodeFault", ended(JobEnd::cancelled, {kEcc}), FailureClass::cancelled, "CANCELLED", false},
        ClassCase{"Preempted", ended(JobEnd::preempted), FailureClass::preempted, "PREEMPTED", false},
        ClassCase{"OutOfMemory", ended(JobEnd::out_of_memory), FailureClass::user_error, "OUT_OF_MEMORY", false},
        ClassCase{"OutOfMemoryOnFaultyNode", ended(JobEnd::out_of_memory, {kEcc}), FailureClass::node_fault, "ECC", true},
        ClassCase{"Segfault", killed(SIGSEGV), FailureClass::user_error, "SIGSEGV", false},
        ClassCase{"SigkillOnHealthyNodes", killed(SIGKILL), FailureClass::unknown, "SIGKILL", false}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Classify, BadNodesAreTheFaultyOnesOnce) {
  Classification c = classify_failure(failed(1, {kEcc, kDown, kEcc}), FailoverConfig{});
  EXPECT_EQ((std::vector<std::string>{"n3", "n2"}), c.bad_nodes);
  EXPECT_EQ("node_fault n3 SaFE: gpu2 uncorrectable ECC=2; n2 Not responding; n3 SaFE: gpu2 uncorrectable ECC=2",
            c.summary());
}

TEST(Classify, ConfiguredExitCodesAndRetryClasses) {
  FailoverConfig config;
  config.infra_exit_codes = {75, 134};
  config.retry_classes = {"node_fault"};
  Classification c = classify_failure(failed(134), config);
  EXPECT_EQ(FailureClass::infra_transient, c.failure_class);
  EXPECT_FALSE(is_retried(c.failure_class, config));
  EXPECT_EQ(FailureClass::user_error, classify_failure(failed(75 + 1), config).failure_class);
}

TEST(Classify, DecodesWaitStatus) {
  EXPECT_EQ(75, decode_wait_status(75 << 8).code);
  EXPECT_EQ(0, decode_wait_status(75 << 8).signal);
  EXPECT_EQ(SIGKILL, decode_wait_status(SIGKILL).signal);
  EXPECT_EQ(0, decode_wait_status(0).code);
}

TEST(Classify, ClassNamesRoundTrip) {
  for (auto c : all_failure_classes()) EXPECT_EQ(c, parse_failure_class(to_string(c)));
  EXPECT_FALSE(parse_failure_class("sometimes"));
}

// On Kubernetes: what the bridge sees of an attempt's pods, through the same table.
using bridge::decide_kube_attempt;
using bridge::kube_attempt_failure;
using bridge::KubeAction;
using bridge::PodObservation;

PodObservation pod(std::string name, std::string node, std::string phase, std::optional<int> exit_code = std::nullopt) {
  PodObservation p;
  p.name = std::move(name);
  p.node = std::move(node);
  p.phase = std::move(phase);
  p.exit_code = exit_code;
  return p;
}
PodObservation on_not_ready_node(PodObservation p) {
  p.node_not_ready = true;
  return p;
}
PodObservation disrupted(PodObservation p, std::string reason) {
  p.disruption = std::move(reason);
  return p;
}
PodObservation on_marked_node(PodObservation p, std::string mark) {
  p.node_mark = std::move(mark);
  return p;
}
PodObservation oom(PodObservation p) {
  p.termination_reason = "OOMKilled";
  return p;
}

struct KubeCase {
  const char* name;
  std::vector<PodObservation> pods;  // of a 2-pod attempt
  std::optional<FailureClass> expected;  // nullopt: running normally, or all succeeded
  const char* evidence_part;
  KubeAction action;  // at attempt 1 of 1 + 3 retries
  std::vector<std::string> bad_nodes;
};

class KubeClassifyTest : public ::testing::TestWithParam<KubeCase> {};

TEST_P(KubeClassifyTest, PodsClassifyAsOnSlurm) {
  const KubeCase& c = GetParam();
  FailoverConfig config;  // the same defaults safed uses: infra_exit_codes [75], retry node_fault + infra_transient
  std::optional<JobFailure> failure = kube_attempt_failure(c.pods);
  ASSERT_EQ(c.expected.has_value(), failure.has_value());
  bridge::KubeDecision d = decide_kube_attempt(c.pods, {}, 2, 1, 3, config);
  EXPECT_EQ(to_string(c.action), to_string(d.action)) << d.message;
  if (!c.expected) return;
  Classification got = classify_failure(*failure, config);
  EXPECT_EQ(to_string(*c.expected), to_string(got.failure_class)) << got.rule;
  EXPECT_EQ(to_string(*c.expected), to_string(d.classification.failure_class));
  EXPECT_NE(got.evidence.find(c.evidence_part), std::string::npos) << got.evidence;
  EXPECT_EQ(c.bad_nodes, got.bad_nodes);
  EXPECT_EQ(c.action == KubeAction::failover, is_retried(got.failure_class, config));
}

INSTANTIATE_TEST_SUITE_P(
    Kubernetes, KubeClassifyTest,
    ::testing::Values(
        KubeCase{"AllRunning", {pod("w-0", "k1", "Running"), pod("w-1", "k2", "Running")}, std::nullopt, "", KubeAction::wait, {}},
        KubeCase{"AllSucceeded", {pod("w-0", "k1", "Succeeded", 0), pod("w-1", "k2", "Succeeded", 0)}, std::nullopt, "",
                 KubeAction::succeeded, {}},
        KubeCase{"OneOfTwoSucceeded", {pod("w-0", "k1", "Succeeded", 0), pod("w-1", "k2", "Running")}, std::nullopt, "",
                 KubeAction::wait, {}},
        KubeCase{"UnscheduledPodIsNotANodeFault", {pod("w-0", "k1", "Running"), on_not_ready_node(pod("w-1", "", "Pending"))},
                 std::nullopt, "", KubeAction::wait, {}},
        KubeCase{"NodeNotReady", {pod("w-0", "k1", "Running"), on_not_ready_node(pod("w-1", "k2", "Running"))},
                 FailureClass::node_fault, "k2 NotReady (pod w-1)", KubeAction::failover, {"k2"}},
        KubeCase{"NodeFaultBeatsTheExitCodeItCaused",
                 {pod("w-0", "k1", "Failed", 1), on_not_ready_node(pod("w-1", "k2", "Failed", 137))}, FailureClass::node_fault,
                 "k2 NotReady", KubeAction::failover, {"k2"}},
        KubeCase{"DisruptionTarget", {pod("w-0", "k1", "Running"), disrupted(pod("w-1", "k2", "Failed", 137), "DeletionByTaintManager")},
                 FailureClass::node_fault, "k2 pod w-1 DisruptionTarget (DeletionByTaintManager)", KubeAction::failover, {"k2"}},
        KubeCase{"PreemptedByTheScheduler",
                 {pod("w-0", "k1", "Running"), disrupted(pod("w-1", "k2", "Failed", 143), "PreemptionByScheduler")},
                 FailureClass::preempted, "PREEMPTED", KubeAction::fail, {}},
        KubeCase{"SafeMarkedTheNode", {pod("w-0", "k1", "Running"), on_marked_node(pod("w-1", "k2", "Running"), "gpu_fault")},
                 FailureClass::node_fault, "k2 SaFE: unhealthy (gpu_fault)", KubeAction::failover, {"k2"}},
        KubeCase{"FinishedBeforeItsNodeWasMarked",
                 {on_marked_node(pod("w-0", "k1", "Succeeded", 0), "gpu_fault"), pod("w-1", "k2", "Running")}, std::nullopt, "",
                 KubeAction::wait, {}},
        KubeCase{"UserErrorOnAHealthyNode", {pod("w-0", "k1", "Running"), pod("w-1", "k2", "Failed", 3)},
                 FailureClass::user_error, "exit code 3, no node fault seen", KubeAction::fail, {}},
        KubeCase{"InfraExitCode", {pod("w-0", "k1", "Running"), pod("w-1", "k2", "Failed", 75)}, FailureClass::infra_transient,
                 "exit code 75 (failover.infra_exit_codes)", KubeAction::failover, {}},
        KubeCase{"OutOfMemoryKilled", {pod("w-0", "k1", "Running"), oom(pod("w-1", "k2", "Failed", 137))},
                 FailureClass::user_error, "OUT_OF_MEMORY", KubeAction::fail, {}},
        KubeCase{"FailedBeforeItsContainerRan", {pod("w-0", "k1", "Running"), pod("w-1", "k2", "Failed")},
                 FailureClass::node_fault, "k2 pod w-1 failed before its container started", KubeAction::failover, {"k2"}}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(KubeClassify, TheFirstContainerToFailIsTheCause) {
  PodObservation a = pod("w-0", "k1", "Failed", 1), b = pod("w-1", "k2", "Failed", 75);
  a.finished_at = "2026-01-01T10:00:05Z";
  b.finished_at = "2026-01-01T10:00:01Z";  // rank 1 asked for a retry first; rank 0 failed after it
  EXPECT_EQ(FailureClass::infra_transient, classify_failure(*kube_attempt_failure({a, b}), FailoverConfig{}).failure_class);
  b.finished_at = "2026-01-01T10:00:09Z";
  EXPECT_EQ(FailureClass::user_error, classify_failure(*kube_attempt_failure({a, b}), FailoverConfig{}).failure_class);
}

TEST(KubeClassify, TheJobsOwnEnd) {
  using bridge::JobObservation;
  // activeDeadlineSeconds: the Job controller stops the pods (they may fail on the way).
  std::vector<PodObservation> stopping = {pod("w-0", "k1", "Failed", 143), on_marked_node(pod("w-1", "k2", "Running"), "gpu")};
  Classification c = classify_failure(*kube_attempt_failure(stopping, JobObservation{false, true}), FailoverConfig{});
  EXPECT_EQ(FailureClass::timeout, c.failure_class) << "a time limit is never retried, even with a node fault meanwhile";
  auto d = decide_kube_attempt({}, JobObservation{false, true}, 2, 1, 3, FailoverConfig{});
  EXPECT_EQ(KubeAction::fail, d.action);
  EXPECT_EQ("timeout (reached its time limit): job state TIMEOUT; not retried: timeout is not in failover.retry_classes", d.message);
  // The Job deleted behind SaFE's back: the pods are gone, as after scancel.
  d = decide_kube_attempt({}, JobObservation{true, false}, 2, 1, 3, FailoverConfig{});
  EXPECT_EQ(KubeAction::fail, d.action);
  EXPECT_EQ(FailureClass::cancelled, d.classification.failure_class);
  EXPECT_EQ(KubeAction::wait, decide_kube_attempt({}, {}, 2, 1, 3, FailoverConfig{}).action) << "pods not created yet";
}

TEST(KubeClassify, RetriesAndRetryClassesAsOnSlurm) {
  std::vector<PodObservation> lost = {pod("w-0", "k1", "Running"), on_not_ready_node(pod("w-1", "k7", "Running"))};
  FailoverConfig config;
  auto d = decide_kube_attempt(lost, {}, 2, 2, 1, config);  // attempt 2 of a workload with 1 retry
  EXPECT_EQ(KubeAction::fail, d.action);
  EXPECT_EQ("node_fault (node fault during the job): k7 NotReady (pod w-1); not retried: retries exhausted (1/1)", d.message);
  EXPECT_EQ(KubeAction::fail, decide_kube_attempt(lost, {}, 2, 1, 0, config).action);  // no retries at all
  config.retry_classes = {"infra_transient"};
  d = decide_kube_attempt(lost, {}, 2, 1, 3, config);
  EXPECT_EQ(KubeAction::fail, d.action);
  EXPECT_NE(d.message.find("not retried: node_fault is not in failover.retry_classes"), std::string::npos) << d.message;
  config.infra_exit_codes = {75, 42};
  EXPECT_EQ(KubeAction::failover, decide_kube_attempt({pod("w-0", "k1", "Failed", 42)}, {}, 1, 1, 3, config).action);
}

}  // namespace
}  // namespace safe
