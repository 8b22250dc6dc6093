#!/usr/bin/env bash
# admission_spank_errors.sh DIR: what a user sees when the SPANK plugin refuses something, on the
# Slurm release the cluster at DIR runs (SPANK's error handling changed in 23.11, 24.05 and 25.05).
# - A bad --safe-* option: the client exits 255 with Slurm's "Invalid --safe-X argument" after
#   SaFE's message; a bad SAFE_* variable: the client exits 1 with SaFE's message. No job is made.
# - A checkpoint directory the job's user cannot create (a path under another user's 0755
#   directory): every task fails before it runs, with SaFE's message on the job's stderr (batch)
#   or srun's; the job ends FAILED 1:0, safed records a user error and does not retry it, and the
#   node is NOT drained (a user's bad path must never take a node out of service).
# - sbatch --export=NONE: the options still reach the job as SAFE_*.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
ensure_user safetest
work=$(mktemp -d /tmp/safe-spank-err.XXXXXX)
jobs=()
cleanup() {
    ((${#jobs[@]} == 0)) || scancel "${jobs[@]}" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"
mkdir "$work/out" "$work/foreign"
chown safetest "$work/out"
chown nobody "$work/foreign"  # 0755: the job's user cannot create anything in it
cd "$work/out"

# exit_status CMD...: CMD's exit status, its output discarded.
exit_status() {
    local rc=0
    "$@" >/dev/null 2>&1 || rc=$?
    echo "$rc"
}

# Client-side refusals, with their exit statuses.
export SBATCH_JOB_NAME=safe-spank-refused SLURM_JOB_NAME=safe-spank-refused
expect_failure "Invalid --safe-retries argument: x" run_as safetest sbatch --safe-retries=x --wrap true
assert_eq 255 "$(exit_status run_as safetest sbatch --safe-retries=x --wrap true)" "sbatch's status for a bad option"
assert_eq 255 "$(exit_status run_as safetest srun --safe-retries=x true)" "srun's status for a bad option"
expect_failure "safe: --safe-retries expects an integer 0..50, got 'x' (from \$SAFE_RETRIES)" \
    run_as safetest env SAFE_RETRIES=x sbatch --wrap true
assert_eq 1 "$(exit_status run_as safetest env SAFE_RETRIES=x sbatch --wrap true)" "sbatch's status for a bad SAFE_RETRIES"
assert_eq 1 "$(exit_status run_as safetest env SAFE_RETRIES=x srun true)" "srun's status for a bad SAFE_RETRIES"
assert_eq 0 "$(squeue -h -n safe-spank-refused | wc -l)" "jobs in the queue after refused submissions"
unset SBATCH_JOB_NAME SLURM_JOB_NAME

# A batch job whose checkpoint directory cannot be created, once the fault tests before this one
# have their nodes back.
all_nodes_in_service 60
ckpt=$work/foreign/ckpt
refused="safe: checkpoint directory: cannot create $ckpt: Permission denied; fix --safe-ckpt-dir or its permissions"
batch=$(run_as safetest sbatch --parsable -o "$work/out/batch-%j" --safe-retries=2 "--safe-ckpt-dir=$ckpt" --wrap 'echo task ran')
jobs+=("$batch")
wait_for "[[ \$(job_field $batch JobState) == FAILED ]]" 30 "scontrol show job $batch"
assert_eq "1:0 0" "$(job_field "$batch" ExitCode) $(job_field "$batch" Restarts)" "exit code and restarts of the batch job"
stderr=$(cat "$work/out/batch-$batch")
assert_contains "$stderr" "$refused" "the batch job's output"
[[ $stderr != *"task ran"* ]] || fail "the batch job's task ran without its checkpoint directory"
wait_for "[[ \$(safed_job $batch .last_class) == user_error ]]" 20 "safectl job $batch"
assert_contains "$(safectl job "$batch")" "user_error is not in failover.retry_classes" "safectl job $batch"

# The same through srun: its stderr says why, and it exits 1.
set +e
out=$(run_as safetest timeout 60 srun --safe-retries=2 "--safe-ckpt-dir=$ckpt" echo task ran 2>&1)
rc=$?
set -e
assert_eq 1 "$rc" "srun's exit status"
assert_contains "$out" "$refused" "srun's output"
[[ $out != *"task ran"* ]] || fail "the srun task ran without its checkpoint directory"

# Neither took a node out of service (this test holds the main cluster's nodes: no other test
# drains one meanwhile).
for n in $(sinfo -h -N -o %N | sort -u); do
    state=$(scontrol show node -o "$n" | grep -o ' State=[^ ]*')
    [[ ! $state =~ DRAIN|DOWN|FAIL ]] || fail "node $n is out of service after a user's bad checkpoint directory:$state Reason=$(node_reason "$n")"
done

# --export=NONE: the options reach the job all the same.
exported=$(run_as safetest sbatch --parsable --wait --export=NONE -o "$work/out/export-%j" --safe-retries=2 \
    --safe-ckpt-signal=USR2@30 --wrap 'echo "max=$SAFE_MAX_RETRIES sig=$SAFE_CKPT_SIGNAL attempt=$SAFE_ATTEMPT"')
assert_eq "max=2 sig=USR2@30 attempt=1" "$(cat "$work/out/export-$exported")" "SAFE_* in an --export=NONE job"
echo "PASS: admission_spank_errors ($(sinfo -V))"
