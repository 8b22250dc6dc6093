// SaFE's one Slurm model: what a job's state means (ended, waiting, shown as), exit statuses as a
// shell reports them, and the bridge's workload phase read from the same typed state.
#include "common/slurm/model.hpp"

#include <gtest/gtest.h>

#include <csignal>

#include "kube-bridge/slurm_workload.hpp"

namespace safe {
namespace {

SlurmJob job(SlurmJobState state, bool requeued = false) {
  SlurmJob j;
  j.state = state;
  j.requeued = requeued;
  return j;
}

struct StateCase {
  SlurmJobState state;
  bool requeued;
  bool ended, waiting;
  const char* shown;
  const char* phase;
};

const StateCase kStates[] = {
    {SlurmJobState::pending, false, false, true, "PENDING", "Pending"},
    {SlurmJobState::pending, true, false, false, "REQUEUED", "Pending"},
    {SlurmJobState::running, false, false, false, "RUNNING", "Running"},
    {SlurmJobState::suspended, false, false, false, "SUSPENDED", "Running"},
    {SlurmJobState::complete, false, true, false, "COMPLETED", "Succeeded"},
    {SlurmJobState::complete, true, false, false, "REQUEUED", "Pending"},  // requeued as it completed
    {SlurmJobState::cancelled, false, true, false, "CANCELLED", "Stopped"},
    {SlurmJobState::failed, false, true, false, "FAILED", "Failed"},
    {SlurmJobState::timeout, false, true, false, "TIMEOUT", "Failed"},
    {SlurmJobState::node_fail, false, true, false, "NODE_FAIL", "Failed"},
    {SlurmJobState::preempted, false, true, false, "PREEMPTED", "Failed"},
    {SlurmJobState::boot_fail, false, true, false, "BOOT_FAIL", "Failed"},
    {SlurmJobState::deadline, false, true, false, "DEADLINE", "Failed"},
    {SlurmJobState::out_of_memory, false, true, false, "OUT_OF_MEMORY", "Failed"},
    {SlurmJobState::other, false, false, false, "UNKNOWN", "Failed"},
};

TEST(SlurmModel, WhatEachJobStateMeans) {
  for (const auto& c : kStates) {
    SlurmJob j = job(c.state, c.requeued);
    SCOPED_TRACE(std::string(c.shown) + (c.requeued ? " (requeued)" : ""));
    EXPECT_EQ(c.ended, has_ended(j));
    EXPECT_EQ(c.waiting, waiting_to_start(j));
    EXPECT_EQ(c.shown, shown_state(j));
    EXPECT_EQ(c.phase, to_string(bridge::workload_phase(j)));
  }
}

TEST(SlurmModel, ExitStatusAsAShellReportsIt) {
  EXPECT_EQ(0, shell_exit_status(0));
  EXPECT_EQ(3, shell_exit_status(3 << 8));
  EXPECT_EQ(128 + SIGKILL, shell_exit_status(SIGKILL));
  EXPECT_EQ(128 + SIGTERM, shell_exit_status(SIGTERM | 0x80));  // with a core dump
}

}  // namespace
}  // namespace safe
