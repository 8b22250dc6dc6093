#!/usr/bin/env bash
# admission_options.sh DIR: the --safe-* options through sbatch, srun and salloc on the --safe
# cluster at DIR: listed in --help, syntax errors caught in the client with their message, values
# (from the command line or SAFE_* variables, the command line winning) reaching the job as SAFE_*.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
work=$(mktemp -d /tmp/safe-opt.XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$work"

for cmd in sbatch srun salloc; do
    help=$($cmd --help)
    for opt in safe-workspace safe-retries safe-ckpt-dir safe-ckpt-signal safe-health safe-hang-timeout safe-min-nodes \
        safe-node-multiple; do
        assert_contains "$help" "--$opt" "$cmd --help"
    done
done

# Every submission below must be refused; any job one of them made anyway carries this name (other
# tests submit to the same cluster at the same time).
export SBATCH_JOB_NAME=safe-options-refused SLURM_JOB_NAME=safe-options-refused SALLOC_JOB_NAME=safe-options-refused
expect_failure "sbatch: error: safe: --safe-retries expects an integer 0..50, got 'x'" sbatch --safe-retries=x --wrap true
expect_failure "safe: --safe-retries expects an integer 0..50, got '51'" srun --safe-retries=51 true
expect_failure "safe: --safe-health expects strict, standard or off, got 'max'" salloc --safe-health=max true
expect_failure "safe: --safe-ckpt-dir expects an absolute path (starting with /), got 'ckpt'" sbatch --safe-ckpt-dir=ckpt --wrap true
expect_failure "safe: --safe-ckpt-dir expects a path without '..', got '/tmp/../etc'" sbatch --safe-ckpt-dir=/tmp/../etc --wrap true
expect_failure "safe: --safe-ckpt-signal expects SIG[@SECS]" sbatch --safe-ckpt-signal=KILL@5 --wrap true
expect_failure "safe: --safe-hang-timeout expects seconds 0..604800, got 'soon'" sbatch --safe-hang-timeout=soon --wrap true
expect_failure "safe: --safe-workspace expects a workspace name" sbatch --safe-workspace='a b' --wrap true
expect_failure "safe: --safe-min-nodes expects a node count 1..100000, got '0'" sbatch --safe-min-nodes=0 --wrap true
expect_failure "safe: --safe-min-nodes applies to batch jobs (sbatch) only" srun --safe-min-nodes=1 true
expect_failure "safe: --safe-retries expects an integer 0..50, got 'abc' (from \$SAFE_RETRIES)" env SAFE_RETRIES=abc sbatch --wrap true
assert_eq 0 "$(squeue -h -n safe-options-refused | wc -l)" "jobs in the queue after rejected submissions"
unset SBATCH_JOB_NAME SLURM_JOB_NAME SALLOC_JOB_NAME

show_env='echo "ws=$SAFE_WORKSPACE attempt=$SAFE_ATTEMPT max=$SAFE_MAX_RETRIES ckpt=$SAFE_CKPT_DIR resume=$SAFE_RESUME_FROM sig=$SAFE_CKPT_SIGNAL"'
all_opts=(--safe-workspace=research --safe-retries=2 "--safe-ckpt-dir=$work/ckpt-CMD" --safe-ckpt-signal=USR2@30
    --safe-health=off --safe-hang-timeout=600)
expected="ws=research attempt=1 max=2 ckpt=$work/ckpt-CMD resume= sig=USR2@30"

out=$(timeout 60 sbatch --wait -o "$work/sbatch.out" "${all_opts[@]/CMD/sbatch}" --wrap "$show_env" >/dev/null && cat "$work/sbatch.out")
assert_eq "${expected/CMD/sbatch}" "$out" "SAFE_* in an sbatch job"
[[ -d $work/ckpt-sbatch ]] || fail "sbatch: checkpoint directory was not created"
# An elastic job's tasks learn its size and its full size.
out=$(timeout 60 sbatch --wait -N2 --safe-min-nodes=1 -o "$work/elastic.out" \
    --wrap 'echo "nodes=$SAFE_NNODES full=$SAFE_FULL_NNODES"' >/dev/null && cat "$work/elastic.out")
assert_eq "nodes=2 full=2" "$out" "SAFE_NNODES and SAFE_FULL_NNODES in an elastic sbatch job"

out=$(timeout 60 srun "${all_opts[@]/CMD/srun}" bash -c "$show_env")
assert_eq "${expected/CMD/srun}" "$out" "SAFE_* in an srun job"

out=$(timeout 60 salloc "${all_opts[@]/CMD/salloc}" srun bash -c "$show_env" 2>/dev/null)
assert_eq "${expected/CMD/salloc}" "$out" "SAFE_* in an salloc job"

# SAFE_* variables give the same options; the command line wins over them.
out=$(SAFE_WORKSPACE=ml SAFE_RETRIES=3 SAFE_CKPT_SIGNAL=TERM timeout 60 srun --safe-retries=1 bash -c "$show_env")
assert_eq "ws=ml attempt=1 max=1 ckpt= resume= sig=TERM@120" "$out" "SAFE_* variables with the command line winning"

# Defaults from the workspace (ml: default_retries 1) and the config (checkpoint USR1@120).
out=$(timeout 60 srun --safe-workspace=ml bash -c "$show_env")
assert_eq "ws=ml attempt=1 max=1 ckpt= resume= sig=USR1@120" "$out" "workspace defaults in the job"

# Resume point: the newest complete checkpoint, never a torn one.
mkdir -p "$work/ck/step-10" "$work/ck/step-20" "$work/ck/step-30"
touch -d '-2 min' "$work/ck/step-10/COMPLETE"
touch "$work/ck/step-20/COMPLETE"
out=$(timeout 60 srun "--safe-ckpt-dir=$work/ck" bash -c 'echo "$SAFE_RESUME_FROM"')
assert_eq "$work/ck/step-20" "$out" "SAFE_RESUME_FROM"
echo "PASS: admission_options"
