#!/usr/bin/env bash
# failover_lost_work.sh DIR: ETTR counts the work a failed attempt loses. A trainer job (10
# steps/s, a checkpoint every 50 steps) exits with the infrastructure code 75 at step 90; safed
# requeues it, it resumes from step 50 and completes. safed's lost work for the job must match
# the steps the trainer redid (40 steps = 4 s), and its ETTR must be below 1.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

trainer_test_on_fixture "$@"

jobid=$(sbatch --parsable -N1 --safe-retries=1 --safe-ckpt-dir="$work/ckpt" -o "$work/out" "$work/job.sh" \
    --steps 120 --rate 10 --ckpt-every 50 --exit-at 90:75)
wait_for "[[ \$(job_field $jobid JobState) == COMPLETED && \$(job_field $jobid Restarts) == 1 ]]" 60 \
    "scontrol show job $jobid; cat $work/out; tail -n 20 $SAFE_CLUSTER_DIR/log/safed.out"
resumed=$(sed -n 's/^resumed from step \([0-9]*\) .* attempt 2$/\1/p' "$work/out")
last1=$(last_step_of_attempt "$work/out" 1)
assert_eq 50 "$resumed" "step resumed from"
assert_eq 90 "$last1" "last step of attempt 1"
redone_s=$(((last1 - resumed) / 10))

wait_for "[[ \$(safed_job $jobid .state) == completed ]]" 10 "safectl job $jobid"
lost_s=$(safed_job "$jobid" .lost_seconds)
run_s=$(safed_job "$jobid" .run_seconds)
# Whole seconds on both ends (Slurm's end time, the checkpoint's time): within 2 s.
((lost_s - redone_s <= 2 && redone_s - lost_s <= 2)) ||
    fail "safed counts $lost_s s of lost work; the trainer redid $((last1 - resumed)) steps (${redone_s} s)"
((run_s >= 9 + 7 - 2)) || fail "run time $run_s s: expected about 16 s (9 s + 7 s of steps)"
# Read whole first: awk stopping at its match would close the pipe under safed_metrics, whose
# write then fails (SIGPIPE), and with pipefail the assignment ended the test without a word.
metrics=$(safed_metrics)
ettr=$(awk '$1 ~ /^safe_ettr\{/ { print $2; exit }' <<<"$metrics")
[[ -n $ettr ]] || fail "no safe_ettr in /metrics"
awk -v e="$ettr" 'BEGIN { exit !(e > 0 && e < 1) }' || fail "ETTR $ettr not in (0, 1)"
printf 'PASS: failover_lost_work: job %s redid %d steps; safed: %d s lost of %d s run; ETTR %s\n' \
    "$jobid" $((last1 - resumed)) "$lost_s" "$run_s" "$ettr"
