#!/usr/bin/env bash
# failover_required_node.sh DIR: a 2-node job that named its nodes (-w n[1-2]) loses one of them
# to a critical GPU fault. Excluding a node the job also requires would leave it pending for ever
# (BadConstraints), so safed drops the failed node from the job's required list, keeps the other
# one required, and the job runs again on that node and a healthy one as soon as the node it just
# left takes it again: once the second of the old run's credential revocation has passed
# (kRevokeMargin_s), not when that credential expires (Slurm's default 120 s, the cluster's).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
trainer_test_on_fixture "$@"
all_nodes_in_service 60

# The batch shell dies of the checkpoint signal: no grace to wait out.
jobid=$(sbatch --parsable -N2 -w 'n[1-2]' --gpus-per-node=1 --safe-retries=1 -o "$work/out" \
    --wrap 'echo "attempt $SAFE_ATTEMPT on $SLURM_JOB_NODELIST"; sleep 300')
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 30 "scontrol show job $jobid"
safectl inject --node n1 --gpu 0 --fault ecc >/dev/null
trap 'safectl inject --node n1 --gpu all --fault clear >/dev/null; end_trainer_test' EXIT
wait_for "[[ \$(job_field $jobid Restarts) == 1 ]]" 40 "scontrol show job $jobid; tail -n 5 $SAFE_CLUSTER_DIR/log/safed.out"
wait_for "[[ \$(job_field $jobid ReqNodeList) == n2 ]]" 10 "scontrol show job $jobid"
assert_contains "$(job_field "$jobid" ExcNodeList)" "n1" "ExcNodeList"
assert_contains "$(admin_comment "$jobid")" "n1 dropped from the required nodes" "AdminComment"
# Running again within seconds, not the credential's 120 s.
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 20 "scontrol show job $jobid; tail -n 5 $SAFE_CLUSTER_DIR/log/safed.out"
nodes=$(scontrol show hostnames "$(job_field "$jobid" NodeList)" | tr '\n' ' ')
[[ $nodes == *"n2 "* && $nodes != *"n1 "* ]] || fail "attempt 2 runs on $nodes; expected n2 and a node other than n1"
echo "PASS: failover_required_node (-w n[1-2], n1 failed: attempt 2 on $nodes)"
