#!/usr/bin/env bash
# failover_hang.sh DIR: a trainer that stops making progress (no output, no heartbeat) for its
# --safe-hang-timeout is checkpoint-signalled and requeued as infra_transient by safed, resumes
# from its last checkpoint and completes; the retry is counted.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

trainer_test_on_fixture "$@"

# Hangs at step 30 on its first attempt only; checkpoints every 10 steps.
jobid=$(sbatch --parsable -N1 --gpus-per-node=1 --safe-retries=1 --safe-hang-timeout=6 \
    --safe-ckpt-dir="$work/ckpt" --safe-ckpt-signal=USR1@3 -o "$work/out" "$work/job.sh" \
    --steps 60 --rate 20 --ckpt-every 10 --hang-at 30:1)
wait_for "grep -q '^hanging at step' $work/out" 30 "cat $work/out"
t0=$(now_ms)
wait_restarted "$jobid" 1 $((t0 / 1000)) 30
detect=$(($(now_ms) - t0))
wait_for "[[ \$(job_field $jobid JobState) == COMPLETED ]]" 30 "scontrol show job $jobid; cat $work/out"
out=$(cat "$work/out")
assert_contains "$out" "resumed from step 20" "job output"
assert_contains "$out" "done 60 steps attempt 2" "job output"
assert_contains "$(admin_comment "$jobid")" "retries=1/1" "AdminComment"
assert_contains "$(admin_comment "$jobid")" "last=infra_transient hang: no output growth" "AdminComment"
assert_eq infra_transient "$(safed_job "$jobid" '.attempts[0].class')" "class of attempt 1"
((detect >= 4000)) || fail "requeued after $detect ms, before the hang timeout of 6 s"
echo "PASS: failover_hang (hung job requeued $((detect / 1000)) s after it stopped, resumed, completed)"
