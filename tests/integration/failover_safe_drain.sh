#!/usr/bin/env bash
# failover_safe_drain.sh DIR: a 2-node trainer job runs; one of its nodes gets an uncorrectable ECC
# error (a sim GPU fault), and safe-healthcheck drains it with SaFE's reason (and sends safed the
# node's GPU grid, that GPU failing the ECC check). safed must send the
# checkpoint signal, requeue the job excluding that node and start it at once; the job resumes
# from the checkpoint written on the signal (no step redone beyond it) and completes. Prints MTTR.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

trainer_test_on_fixture "$@"
all_nodes_in_service 60

# 20 steps/s, a checkpoint every 50 steps: the signal-driven checkpoint must beat the interval.
jobid=$(sbatch --parsable -N2 --gpus-per-node=1 --safe-retries=2 --safe-ckpt-dir="$work/ckpt" \
    --safe-ckpt-signal=USR1@30 -o "$work/out" "$work/job.sh" --steps 260 --rate 20 --ckpt-every 50)
wait_for "[[ \$(last_step_of_attempt $work/out 1) -ge 60 ]]" 30 "scontrol show job $jobid; cat $work/out"
nodes=$(job_field "$jobid" NodeList)
bad=$(scontrol show hostnames "$nodes" | tail -n1)

# A real fault, not a drain by hand: the checker that drains the node is the one that would
# resume a drain it did not find a fault for.
t0=$(now_ms)
safectl inject --node "$bad" --gpu 0 --fault ecc >/dev/null
wait_restarted "$jobid" 1 $((t0 / 1000)) 30
mttr_ms=$(($(now_ms) - t0))

# The GPU grid the node's health checker sent safed with that run: GPU 0 failed the ECC check, GPU 1
# passed (the web console's cluster page shows it).
gpu_failures() {  # NODE GPU: the checks that GPU failed in the grid safed keeps, as a JSON list
    safed_read bash -c 'curl -sSf -H "Authorization: Munge $(munge -n)" "$SAFE_CONTROLLER_URL/api/v1/node-gpus"' |
        jq -c --arg n "$1" --argjson g "$2" '.items[] | select(.node == $n) | .gpus[] | select(.index == $g) | [.failed[].check]'
}
wait_for "[[ \$(gpu_failures $bad 0) == '[\"ecc_uncorrectable\"]' ]]" 15 \
    "curl -sS -H \"Authorization: Munge \$(munge -n)\" $SAFE_CONTROLLER_URL/api/v1/node-gpus"
assert_eq "[]" "$(gpu_failures "$bad" 1)" "the checks $bad's GPU 1 failed"

new_nodes=$(job_field "$jobid" NodeList)
[[ $(scontrol show hostnames "$new_nodes") != *"$bad"* ]] ||
    fail "job restarted on the drained node $bad ($new_nodes):"$'\n'"$(scontrol show job "$jobid"; scontrol show node "$bad"; tail -n 20 "$SAFE_CLUSTER_DIR/log/safed.out")"
assert_contains "$(job_field "$jobid" ExcNodeList)" "$bad" "ExcNodeList"
comment=$(admin_comment "$jobid")
assert_contains "$comment" "retries=1/2" "AdminComment"
assert_contains "$comment" "last=node_fault $bad SaFE: gpu0 uncorrectable ECC=2" "AdminComment"

wait_for "[[ \$(job_field $jobid JobState) == COMPLETED ]]" 60 "scontrol show job $jobid; cat $work/out"
out=$(cat "$work/out")
assert_contains "$out" "(on signal)" "job output (checkpoint on the signal)"
# Attempt 2 resumes from the checkpoint safed's fence names: attempt 1's newest when safed
# requeued it (the signal's, or a periodic one written after it while the requeue waited). A
# checkpoint attempt 1 completed after the fence, before Slurm stopped it, does not count.
fence=$work/ckpt/.safe-fence/job-$jobid.attempt-1
[[ -f $fence ]] || fail "no fence for attempt 1: $(ls -la "$work/ckpt/.safe-fence" 2>&1)"
fenced=$(sed -n 's/^checkpoint=step-\([0-9]*\)-attempt-1$/\1/p' "$fence")
[[ -n $fenced ]] || fail "the fence names no checkpoint of attempt 1: $(cat "$fence")"
on_signal=$(sed -n 's/^checkpoint step \([0-9]*\) (on signal)$/\1/p' "$work/out" | head -n1)
((fenced >= on_signal)) || fail "the fence names step $fenced, older than the signal's checkpoint $on_signal"
resumed=$(sed -n 's/^resumed from step \([0-9]*\) .* attempt 2$/\1/p' "$work/out")
assert_eq "$fenced" "$resumed" "step resumed from (the fenced checkpoint of attempt 1)"
last1=$(last_step_of_attempt "$work/out" 1)
first2=$(first_step_of_attempt "$work/out" 2)
assert_eq $((resumed + 1)) "$first2" "first step of attempt 2"
redone=$((last1 - resumed))
((redone <= 50)) || fail "$redone steps redone, more than the checkpoint interval of 50"
assert_contains "$out" "done 260 steps attempt 2" "job output"

# ETTR: the work safed counts as lost for attempt 1 (its run after the signal's checkpoint, up to
# the requeue) matches the steps the trainer redid at 20 steps/s, within the one-second
# resolution of safed's clock and of the checkpoint's time.
lost_s=$(safed_job "$jobid" .lost_seconds)
run_s=$(safed_job "$jobid" .run_seconds)
[[ $lost_s =~ ^[0-9]+$ && $run_s =~ ^[0-9]+$ ]] || fail "safed's job record lacks run_seconds/lost_seconds: $(safectl job "$jobid" --json)"
redone_s=$(((redone + 10) / 20))
((lost_s - redone_s <= 2 && redone_s - lost_s <= 2)) ||
    fail "safed counts $lost_s s of lost work; the trainer redid $redone steps (${redone_s} s at 20 steps/s)"
((run_s > lost_s)) || fail "run time $run_s s not above the lost work $lost_s s"

history=$(safectl job "$jobid")
assert_contains "$history" "node_fault" "safectl job"
assert_contains "$history" "requeue" "safectl job"
metrics=$(safed_metrics)
grep -Eq '^safe_failovers_total\{class="node_fault"\} [1-9]' <<<"$metrics" || fail "metrics lack the failover: $metrics"
printf 'PASS: failover_safe_drain: job %s on %s, %s drained -> running on %s after %d.%03d s (MTTR), %d steps redone (safed: %d s lost of %d s run)\n' \
    "$jobid" "$nodes" "$bad" "$new_nodes" $((mttr_ms / 1000)) $((mttr_ms % 1000)) "$redone" "$lost_s" "$run_s"
