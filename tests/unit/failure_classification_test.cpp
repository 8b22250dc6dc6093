// classify_failure, table-driven: each row is one situation the controller meets.
#include <gtest/gtest.h>

#include <csignal>

#include "common/failure_classification.hpp"

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
        ClassCase{"RunningOnDrainedNode", ended(JobEnd::running_on_bad_node, {kEcc}), FailureClass::node_fault, "ECC", true},
        ClassCase{"InfraExitCode", failed(75), FailureClass::infra_transient, "exit code 75", true},
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

}  // namespace
}  // namespace safe
