// The Kubernetes failover table: node faults fail over while retries remain, user errors do not.
#include <gtest/gtest.h>

#include "common/kube_failover.hpp"

namespace safe {
namespace {

PodObservation pod(std::string name, std::string node, std::string phase) {
  PodObservation p;
  p.name = std::move(name);
  p.node = std::move(node);
  p.phase = std::move(phase);
  return p;
}

struct Case {
  const char* what;
  std::vector<PodObservation> pods;
  int attempt, retries;
  KubeAction action;
  const char* bad_node;
};

TEST(KubeFailover, DecisionTable) {
  PodObservation running0 = pod("w-0", "k1", "Running"), running1 = pod("w-1", "k2", "Running");
  PodObservation ok0 = pod("w-0", "k1", "Succeeded"), ok1 = pod("w-1", "k2", "Succeeded");
  PodObservation user_fail = pod("w-1", "k2", "Failed");
  user_fail.exit_code = 3;
  PodObservation not_ready = running1;
  not_ready.node_not_ready = true;
  PodObservation disrupted = pod("w-1", "k2", "Failed");
  disrupted.disruption_target = true;
  disrupted.exit_code = 137;
  PodObservation marked = running1;
  marked.node_marked_unhealthy = true;
  PodObservation pending = pod("w-1", "", "Pending");
  pending.node_not_ready = true;  // not on a node yet: nothing to blame
  PodObservation done_on_bad = ok1;
  done_on_bad.node_not_ready = true;

  const Case cases[] = {
      {"all running", {running0, running1}, 1, 3, KubeAction::wait, ""},
      {"all succeeded", {ok0, ok1}, 1, 3, KubeAction::succeeded, ""},
      {"one of two succeeded", {ok0, running1}, 1, 3, KubeAction::wait, ""},
      {"user error", {running0, user_fail}, 1, 3, KubeAction::fail_user_error, ""},
      {"node NotReady", {running0, not_ready}, 1, 3, KubeAction::failover, "k2"},
      {"DisruptionTarget", {running0, disrupted}, 2, 3, KubeAction::failover, "k2"},
      {"SaFE marked the node", {running0, marked}, 1, 1, KubeAction::failover, "k2"},
      {"node fault beats the exit code it caused", {user_fail, not_ready}, 1, 3, KubeAction::failover, "k2"},
      {"retries exhausted", {running0, not_ready}, 4, 3, KubeAction::fail_retries_exhausted, "k2"},
      {"no retries at all", {running0, not_ready}, 1, 0, KubeAction::fail_retries_exhausted, "k2"},
      {"unscheduled pod", {running0, pending}, 1, 3, KubeAction::wait, ""},
      {"finished before the node failed", {ok0, done_on_bad}, 1, 3, KubeAction::succeeded, ""},
  };
  for (const auto& c : cases) {
    KubeDecision d = decide_kube_workload(c.pods, 2, c.attempt, c.retries);
    EXPECT_EQ(to_string(d.action), to_string(c.action)) << c.what << ": " << d.message;
    EXPECT_EQ(d.bad_node, c.bad_node) << c.what;
  }
}

TEST(KubeFailover, MessagesNameTheClassAndTheNode) {
  PodObservation p = pod("w-0", "k7", "Running");
  p.node_marked_unhealthy = true;
  EXPECT_EQ(decide_kube_workload({p}, 1, 1, 2).message, "node_fault: SaFE marked node k7 unhealthy; recreating without it");
  PodObservation f = pod("w-0", "k1", "Failed");
  f.exit_code = 2;
  EXPECT_EQ(decide_kube_workload({f}, 1, 1, 2).message, "user_error: pod w-0 exited with code 2 on healthy node k1; not retried");
}

}  // namespace
}  // namespace safe
