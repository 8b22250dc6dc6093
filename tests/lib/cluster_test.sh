# shellcheck shell=bash
# Helpers for the integration tests on a real local Slurm cluster (tests/cluster/safe-cluster).
# Source this file; every helper prints "FAIL: ..." to stderr and exits 1 on failure.

# job_fields, job_field and now_ms (one snapshot of a job; the clock in milliseconds).
# shellcheck source=slurm_jobs.sh
. "$(dirname "${BASH_SOURCE[0]}")/slurm_jobs.sh"

# Absolute path of tests/cluster/safe-cluster, for tests that start their own cluster.
SAFE_CLUSTER_BIN=$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd -P)/safe-cluster
export SAFE_CLUSTER_BIN

# fail MESSAGE...
fail() {
    echo "FAIL: ${TEST_NAME:-$(basename "$0")}: $*" >&2
    exit 1
}

# assert_eq EXPECTED ACTUAL [WHAT]
assert_eq() {
    [[ $1 == "$2" ]] || fail "${3:-value}: expected '$1', got '$2'"
}

# assert_contains HAYSTACK NEEDLE [WHAT]
assert_contains() {
    [[ $1 == *"$2"* ]] || fail "${3:-output} does not contain '$2'; it is:"$'\n'"$1"
}

# wait_for CMD TIMEOUT_S [DIAG]: runs the shell command string CMD (eval'd, so functions work)
# every 0.2 s until it succeeds; fails the test after TIMEOUT_S seconds, showing the output of
# the command string DIAG (default: the queue) to say why.
wait_for() {
    local cmd=$1 timeout=$2 diag=${3:-squeue -a} deadline
    deadline=$(($(date +%s%3N) + timeout * 1000))
    until eval "$cmd" >/dev/null 2>&1; do
        (($(date +%s%3N) < deadline)) ||
            fail "timed out after ${timeout}s waiting for: $cmd"$'\n'"$diag:"$'\n'"$(eval "$diag" 2>&1)"
        sleep 0.2
    done
}

# safed_read CMD...: the output of CMD, a read of safed's API (safectl, curl). A read that fails is
# tried again, four more times 0.2 s apart, each failure said on stderr (CI saw a read fail once
# under load, and the test end without a word); then the test fails with the last error.
safed_read() {
    local out i
    for ((i = 1; i <= 5; i++)); do
        if out=$("$@" 2>&1); then
            printf '%s\n' "$out"
            return 0
        fi
        echo "safed_read: '$*' failed (try $i of 5): $out" >&2
        sleep 0.2
    done
    fail "'$*' failed 5 times; the last: $out"
}

# safed_metrics: safed's /metrics.
safed_metrics() { safed_read curl -sSf "$SAFE_CONTROLLER_URL/metrics"; }

# reconcile_passes: the reconcile passes safed has completed (safe_reconcile_passes_total).
reconcile_passes() {
    curl -sf "$SAFE_CONTROLLER_URL/metrics" 2>/dev/null | awk '$1 == "safe_reconcile_passes_total" { print $2 }'
}

# wait_passes N [TIMEOUT_S]: waits until safed has completed N more reconcile passes. A check that
# safed did NOT act rests on passes in which it could have, not on seconds of a busy machine.
wait_passes() {
    local n=$1 timeout=${2:-60} start
    start=$(reconcile_passes)
    [[ $start =~ ^[0-9]+$ ]] || fail "cannot read safe_reconcile_passes_total from $SAFE_CONTROLLER_URL/metrics"
    wait_for "((\$(reconcile_passes) >= $start + $n))" "$timeout" "curl -s $SAFE_CONTROLLER_URL/metrics | grep passes"
}

# node_reason NODE: the node's Reason without its " [user@time]" suffix, and only when the node is
# DRAIN, DOWN or FAIL: Slurm 23.02.5 through 25.11 without accounting keep a resumed node's old
# Reason, which then says nothing (common/slurm/model.hpp, reason_counts).
node_reason() {
    local line
    line=$(scontrol show node -o "$1") || return 1
    [[ $(grep -o ' State=[^ ]*' <<<"$line") =~ DRAIN|DOWN|FAIL ]] || return 0
    sed -n 's/.* Reason=\(.*\) \[[^]]*@[^]]*\]$/\1/p' <<<"$line"
}

# use_cluster DIR: sources DIR/env (SLURM_CONF, SAFE_CLUSTER_DIR, PATH, ...).
use_cluster() {
    [[ -f $1/env ]] || fail "no cluster at $1 (missing $1/env); run: safe-cluster up --dir $1"
    # shellcheck disable=SC1091
    . "$1/env"
}

# cluster_procs DIR: lists (pid and command) the processes of the cluster at DIR, the caller's
# own shell excluded: safe-cluster's own scan, the one `down` acts on.
cluster_procs() { "$SAFE_CLUSTER_BIN" pids --dir "$1"; }

# survivors_of DIR: the processes still tagged SAFE_CLUSTER_DIR=DIR, and slurmstepd holding a file
# under DIR open (it loses the tag), the caller's shell excluded. Deliberately not safe-cluster's
# own scan: a check that `down` left nothing behind must not use the eyes of `down` itself.
survivors_of() {
    local dir f pid
    dir=$(realpath -m -- "$1")
    for f in /proc/[0-9]*/environ; do
        pid=${f#/proc/}
        pid=${pid%/environ}
        [[ $pid != "$$" && $pid != "$BASHPID" ]] || continue
        if grep -qzxF -- "SAFE_CLUSTER_DIR=$dir" "$f" 2>/dev/null ||
            { [[ $(cat "/proc/$pid/comm" 2>/dev/null) == slurmstepd ]] &&
                [[ -n $(find "/proc/$pid/fd" -maxdepth 1 -lname "$dir/*" -print -quit 2>/dev/null) ]]; }; then
            echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
        fi
    done
}

# cluster_pids_of DIR PROGRAM: the pids of the cluster's processes running PROGRAM (safed,
# safe-trainer, ...), one a line.
cluster_pids_of() { cluster_procs "$1" | awk -v n="$2" '{ k = split($2, p, "/") } p[k] == n { print $1 }'; }

# ensure_user NAME: an unprivileged account for a test, created (without a home) when missing.
# Tests run in parallel: a useradd that lost the race to another test's is fine.
ensure_user() {
    id "$1" >/dev/null 2>&1 || useradd --no-create-home --shell /bin/bash "$1" 2>/dev/null || id "$1" >/dev/null
}

# run_as USER CMD...: CMD as USER, with the cluster's SLURM_CONF and PATH.
run_as() {
    local user=$1
    shift
    runuser -u "$user" -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" "$@"
}

# expect_failure EXPECTED CMD...: CMD must fail and print (stdout or stderr) EXPECTED.
expect_failure() {
    local expected=$1 out rc
    shift
    set +e
    out=$("$@" 2>&1)
    rc=$?
    set -e
    ((rc != 0)) || fail "'$*' succeeded; expected it to fail with: $expected"
    assert_contains "$out" "$expected" "'$*'"
}
