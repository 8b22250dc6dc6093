// safe-healthcheck --kube: the node mark follows the same hysteresis verdicts as a Slurm drain.
#include <gtest/gtest.h>

#include "healthcheck/kube_mark.hpp"

namespace safe {
namespace {

CheckResult failing(const char* check) {
  CheckResult r;
  r.check = check;
  r.status = CheckStatus::fail;
  r.detail = "gpu2 uncorrectable ECC=2";
  return r;
}

TEST(KubeMark, MarksOncePastTheFailCount) {
  RunVerdict v;
  v.drain_cause = failing("ecc_uncorrectable");
  KubeMarkDecision d = decide_kube_mark(v);
  EXPECT_EQ(d.action, KubeMarkAction::mark);
  EXPECT_EQ(kube_mark_command("/usr/sbin/safe-kube-node", "node7", d),
            (std::vector<std::string>{"/usr/sbin/safe-kube-node", "mark", "node7", "--reason", "ecc_uncorrectable"}));
}

TEST(KubeMark, PendingFailuresAndWarningsLeaveTheMarkAlone) {
  RunVerdict pending;
  pending.pending.push_back(failing("temperature"));
  EXPECT_EQ(decide_kube_mark(pending).action, KubeMarkAction::none);
  RunVerdict suspect;
  suspect.warnings.push_back(failing("ecc_correctable"));
  EXPECT_EQ(decide_kube_mark(suspect).action, KubeMarkAction::none);
  RunVerdict recovering;  // clean, but not yet pass_runs_before_resume clean runs
  recovering.clean_runs = 1;
  EXPECT_EQ(decide_kube_mark(recovering).action, KubeMarkAction::none);
  EXPECT_TRUE(kube_mark_command("x", "n", decide_kube_mark(recovering)).empty());
}

TEST(KubeMark, ClearsOnceRecovered) {
  RunVerdict v;
  v.all_recovered = true;
  EXPECT_EQ(kube_mark_command("t", "node7", decide_kube_mark(v)), (std::vector<std::string>{"t", "clear", "node7"}));
}

}  // namespace
}  // namespace safe
