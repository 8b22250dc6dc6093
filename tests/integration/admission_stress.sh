#!/usr/bin/env bash
# admission_stress.sh DIR: slurmctld with job_submit_safe.so survives 500 submissions mixing valid
# jobs, policy rejections (inside slurmctld) and option errors (in the client), made by 10 clients
# at once while other clients update held jobs (refused and allowed changes): since 23.02
# slurmctld may call job_submit and job_modify concurrently. It admits exactly the valid ones and
# refuses exactly the forbidden updates.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"

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
# Client c submits every 10th request; each writes "VARIANT admitted|refused" lines to its file.
work=$(mktemp -d)
trap 'scancel --name=safe-stress-test >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
clients=10
submit_client() {
    local c=$1 i n v
    for ((i = c; i < 500; i += clients)); do
        n=$((i % ${#variants[@]}))
        v=${variants[n]}
        # shellcheck disable=SC2086  # the options are words
        if sbatch --hold --job-name=safe-stress-test -o /dev/null ${v#*|} --wrap true >/dev/null 2>&1; then
            echo "$n admitted"
        else
            echo "$n refused"
        fi
    done >"$work/submit.$c"
}
# Updates of held jobs while the submissions go on: a user's change of the licenses the quota was
# computed from is refused; a change of the time limit is not.
ensure_user safetest
as_user() { run_as safetest "$@"; }
update_client() {
    local c=$1 i job
    job=$(as_user sbatch --parsable --hold --job-name=safe-stress-test -o /dev/null --gpus=1 --wrap true)
    for ((i = 0; i < 25; i++)); do
        if as_user scontrol update jobid="$job" Licenses=foo:1 >/dev/null 2>&1; then echo "licenses allowed"; else echo "licenses refused"; fi
        if as_user scontrol update jobid="$job" TimeLimit=$((10 + i)) >/dev/null 2>&1; then echo "timelimit allowed"; else echo "timelimit refused"; fi
    done >"$work/update.$c"
}
pids=()
for ((c = 0; c < clients; c++)); do submit_client "$c" & pids+=($!); done
for c in 0 1 2 3; do update_client "$c" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid" || fail "a client failed"; done

declare -a admitted tried
while read -r n outcome; do
    tried[n]=$((${tried[n]:-0} + 1))
    [[ $outcome == admitted ]] && admitted[n]=$((${admitted[n]:-0} + 1))
done < <(cat "$work"/submit.*)
assert_eq 500 "$(cat "$work"/submit.* | wc -l)" "submissions made"
assert_eq 100 "$(grep -c '^licenses refused$' "$work"/update.*  | awk -F: '{ s += $2 } END { print s }')" "licenses updates refused"
assert_eq 100 "$(grep -c '^timelimit allowed$' "$work"/update.* | awk -F: '{ s += $2 } END { print s }')" "time limit updates allowed"
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
assert_eq $((expected + 4)) "$(squeue -h --name=safe-stress-test | wc -l)" "held stress jobs in the queue"
echo "PASS: admission_stress ($accepted of 500 admitted by $clients clients at once, 200 updates beside them; slurmctld up)"
