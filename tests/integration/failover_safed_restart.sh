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
job="" bad=""
cleanup() {
    [[ -z $job ]] || scancel "$job" 2>/dev/null || true
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

failover_in_grace "$work/job.sh" "$work/out" "$SAFE_CLUSTER_DIR/log/safed.out"
kill -KILL "$pid"
wait_for "[[ -z \$(safed_pid) ]]" 10
sleep 2  # safed stays down a while, as after a crash: the scenario, not a check
(setsid "${safed_cmd[@]}" </dev/null >>"$SAFE_CLUSTER_DIR/log/safed.out" 2>&1 &)
wait_for "[[ -n \$(safed_pid) ]]" 10

wait_restarted "$job" 1 $((t0 / 1000)) 40
mttr=$(($(now_ms) - t0))
wait_passes 5  # a repeated requeue would have been made in one of these passes
assert_eq 1 "$(job_field "$job" Restarts)" "Slurm's restart count of job $job"
assert_eq RUNNING "$(job_field "$job" JobState)" "state of job $job"
requeues=$(safectl job "$job" --json | jq '[.actions[] | select(.action == "requeue")] | length')
assert_eq 1 "$requeues" "requeues safed recorded"
assert_contains "$(admin_comment "$job")" "retries=1/3" "AdminComment"
echo "PASS: failover_safed_restart (safed killed after the signal; one requeue; running again after $((mttr / 1000)) s)"
