#!/usr/bin/env bash
# admission_stress.sh DIR: slurmctld with job_submit_safe.so survives 500 submissions mixing valid
# jobs, policy rejections (inside slurmctld) and option errors (in the client), and admits exactly
# the valid ones.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
trap 'scancel --name=safe-stress-test >/dev/null 2>&1 || true' EXIT

variants=(
    "valid|--safe-workspace=ml --gpus=2"
    "valid|--safe-workspace=research --safe-retries=3 --safe-ckpt-signal=USR2"
    "valid|--safe-health=strict --safe-hang-timeout=60"
    "valid|"
    "reject|--safe-workspace=nope"
    "reject|--safe-workspace=ml --gpus=64"
    "reject|-L safe_ws_research:1"
    "reject|--safe-retries=x"
    "reject|--safe-ckpt-dir=relative"
    "reject|--safe-ckpt-signal=STOP"
)
# Tallied per variant: a total alone would let a wrongly admitted job hide a wrongly refused one.
declare -a admitted tried
for ((i = 0; i < 500; i++)); do
    n=$((i % ${#variants[@]}))
    v=${variants[n]}
    tried[n]=$((${tried[n]:-0} + 1))
    # shellcheck disable=SC2086  # the options are words
    if sbatch --hold --job-name=safe-stress-test -o /dev/null ${v#*|} --wrap true >/dev/null 2>&1; then
        admitted[n]=$((${admitted[n]:-0} + 1))
    fi
done
expected=0
for n in "${!variants[@]}"; do
    v=${variants[n]}
    want=0
    [[ ${v%%|*} == valid ]] && want=${tried[n]}
    expected=$((expected + want))
    assert_eq "$want" "${admitted[n]:-0}" "admitted of ${tried[n]} submissions of '${v#*|}' (${v%%|*})"
done
accepted=$expected
scontrol ping | grep -q "is UP" || fail "slurmctld is not up after 500 submissions"
assert_eq "$expected" "$(squeue -h --name=safe-stress-test | wc -l)" "held stress jobs in the queue"
echo "PASS: admission_stress ($accepted of 500 admitted, slurmctld up)"
