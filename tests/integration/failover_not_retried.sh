#!/usr/bin/env bash
# failover_not_retried.sh DIR: what SaFE must NOT retry, and where retries stop. On healthy nodes,
# with retries available: a user error (exit 1) and a cancelled job stay ended, classified in
# safed's record (Slurm refuses AdminComment changes to ended jobs); a TIMEOUT job is
# failover_timeout's. A job exiting with a configured infrastructure code (75) is retried until its
# --safe-retries are used up (AdminComment retries=1/1), then stays FAILED with "retries exhausted".
# A job its user cancels while it fails over (a GPU fault, during the checkpoint grace) stays
# cancelled: safed does not requeue it.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"

work=$(mktemp -d)
jobs=()
faulty=""
cleanup() {
    ((${#jobs[@]} == 0)) || scancel "${jobs[@]}" 2>/dev/null || true
    [[ -z $faulty ]] || safectl inject --node "$faulty" --gpu 0 --fault clear >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
submit() {
    local id
    id=$(sbatch --parsable -N1 -o "$work/out-%j" "$@")
    jobs+=("$id")
    echo "$id"
}

user_error=$(submit --safe-retries=2 --wrap 'exit 1')
cancelled=$(submit --safe-retries=2 --wrap 'sleep 300')
infra=$(submit --safe-retries=1 --wrap 'echo "attempt $SAFE_ATTEMPT"; exit 75')

wait_for "[[ \$(job_field $cancelled JobState) == RUNNING ]]" 30
scancel "$cancelled"

# The infrastructure failure: requeued once (retries=1), then left FAILED.
wait_for "[[ \$(job_field $infra Restarts) == 1 && \$(job_field $infra JobState) == FAILED ]]" 30 \
    "scontrol show job $infra; tail -n 20 $SAFE_CLUSTER_DIR/log/safed.out"
wait_for "[[ \$(safed_job $infra .last_evidence) == *'retries exhausted (1/1)'* ]]" 10 "safectl job $infra"
assert_eq failed "$(safed_job "$infra" .state)" "safed's state of the exit-75 job"
comment=$(admin_comment "$infra")
assert_contains "$comment" "retries=1/1" "AdminComment of the exit-75 job"
assert_contains "$comment" "last=infra_transient exit code 75" "AdminComment of the exit-75 job"
assert_eq $'attempt 1\nattempt 2' "$(cat "$work/out-$infra")" "output of the exit-75 job (append mode over requeues)"

wait_for "[[ \$(safed_job $user_error .last_class) == user_error ]]" 20 "safectl job $user_error"
assert_contains "$(safed_job "$user_error" .last_evidence)" "exit code 1, no node fault seen (not retried" \
    "safed's evidence for the user-error job"
wait_for "[[ \$(safed_job $cancelled .last_class) == cancelled ]]" 20 "safectl job $cancelled"

# Cancelled during its failover: alone on its node (no other test job sees the fault), it ignores the checkpoint signal, so safed waits out the grace;
# the user cancels within it.
all_nodes_in_service 60
in_grace=$(submit --exclusive --safe-retries=2 --safe-ckpt-signal=USR1@120 --wrap 'trap "" USR1; sleep 300')
wait_for "[[ \$(job_field $in_grace JobState) == RUNNING ]]" 30 "scontrol show job $in_grace"
faulty=$(job_field "$in_grace" NodeList)
safectl inject --node "$faulty" --gpu 0 --fault ecc >/dev/null
wait_for "[[ \$(safed_job $in_grace '.failovers[0].phase') == signalled ]]" 30 \
    "safectl job $in_grace; tail -n 20 $SAFE_CLUSTER_DIR/log/safed.out"
scancel "$in_grace"
wait_for "[[ \$(job_field $in_grace JobState) == CANCELLED ]]" 30 "scontrol show job $in_grace"
safectl inject --node "$faulty" --gpu 0 --fault clear >/dev/null
faulty=""

wait_passes 5  # a wrong requeue would have been made in one of these passes
for j in "$user_error" "$cancelled"; do
    assert_eq 0 "$(job_field "$j" Restarts)" "restarts of job $j ($(job_field "$j" JobState))"
done
assert_eq FAILED "$(job_field "$user_error" JobState)" "state of the user-error job"
assert_eq CANCELLED "$(job_field "$cancelled" JobState)" "state of the cancelled job"
assert_eq 1 "$(job_field "$infra" Restarts)" "restarts of the exit-75 job"
assert_eq "CANCELLED 0" "$(job_field "$in_grace" JobState) $(job_field "$in_grace" Restarts)" \
    "state and restarts of the job cancelled in its checkpoint grace"
assert_eq cancelled "$(safed_job "$in_grace" .state)" "safed's state of the job cancelled in its grace"
listing=$(safectl jobs --all)
assert_contains "$listing" "user_error" "safectl jobs --all"
all_nodes_in_service 30  # the checker resumes its own drain
echo "PASS: failover_not_retried (user error, scancel not requeued, nor a scancel during a failover; exit 75 retried once then FAILED)"
