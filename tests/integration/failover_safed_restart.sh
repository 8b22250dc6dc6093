#!/usr/bin/env bash
# failover_safed_restart.sh DIR: safed is killed (SIGKILL) in the middle of a failover, after it
# sent the checkpoint signal and before the requeue, and started again. The failover must go on
# from its recorded phase: exactly one requeue, the job running again on healthy nodes.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"

pid=$(safed_pid)
[[ -n $pid ]] || fail "no safed running for $SAFE_CLUSTER_DIR"
mapfile -d '' -t safed_cmd <"/proc/$pid/cmdline"

work=$(mktemp -d)
jobid="" bad=""
cleanup() {
    [[ -z $jobid ]] || scancel "$jobid" 2>/dev/null || true
    # The checker resumes its own drain once the GPU is back.
    [[ -z $bad ]] || safectl inject --node "$bad" --gpu 1 --fault clear >/dev/null 2>&1 || true
    # Whatever happened, leave a safed running for the other tests.
    if [[ -z $(safed_pid) ]]; then
        (setsid "${safed_cmd[@]}" </dev/null >>"$SAFE_CLUSTER_DIR/log/safed.out" 2>&1 &)
    fi
    rm -rf "$work"
}
trap cleanup EXIT
write_trainer_script "$work/job.sh"
all_nodes_in_service 60

# No checkpoint directory: the grace period (8 s) runs out in full, a window to kill safed in.
jobid=$(sbatch --parsable -N2 --gpus-per-node=1 --safe-retries=3 --safe-ckpt-signal=USR1@8 \
    -o "$work/out" "$work/job.sh" --steps 100000 --rate 10)
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 30
bad=$(scontrol show hostnames "$(job_field "$jobid" NodeList)" | head -n1)
# A real fault the health checker drains the node for (a drain by hand, it would resume).
t0=$(now_ms)
safectl inject --node "$bad" --gpu 1 --fault lost >/dev/null
wait_for "grep -q 'job $jobid: checkpoint signal' $SAFE_CLUSTER_DIR/log/safed.out" 15 "tail $SAFE_CLUSTER_DIR/log/safed.out"
kill -KILL "$pid"
wait_for "[[ -z \$(safed_pid) ]]" 10
sleep 2  # safed stays down a while, as after a crash: the scenario, not a check
(setsid "${safed_cmd[@]}" </dev/null >>"$SAFE_CLUSTER_DIR/log/safed.out" 2>&1 &)
wait_for "[[ -n \$(safed_pid) ]]" 10

wait_restarted "$jobid" 1 $((t0 / 1000)) 40
mttr=$(($(now_ms) - t0))
wait_passes 5  # a repeated requeue would have been made in one of these passes
assert_eq 1 "$(job_field "$jobid" Restarts)" "Slurm's restart count of job $jobid"
assert_eq RUNNING "$(job_field "$jobid" JobState)" "state of job $jobid"
requeues=$(safectl job "$jobid" --json | jq '[.actions[] | select(.action == "requeue")] | length')
assert_eq 1 "$requeues" "requeues safed recorded"
assert_contains "$(admin_comment "$jobid")" "retries=1/3" "AdminComment"
echo "PASS: failover_safed_restart (safed killed after the signal; one requeue; running again after $((mttr / 1000)) s)"
