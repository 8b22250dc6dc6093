# shellcheck shell=bash
# Helpers for the integration tests on a real local Slurm cluster (tests/cluster/safe-cluster).
# Source this file; every helper prints "FAIL: ..." to stderr and exits 1 on failure.

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

# use_cluster DIR: sources DIR/env (SLURM_CONF, SAFE_CLUSTER_DIR, PATH, ...).
use_cluster() {
    [[ -f $1/env ]] || fail "no cluster at $1 (missing $1/env); run: safe-cluster up --dir $1"
    # shellcheck disable=SC1091
    . "$1/env"
}

# cluster_procs DIR: lists (pid and command) the processes of the cluster at DIR: those tagged
# SAFE_CLUSTER_DIR=DIR (daemons, jobs submitted from its env) except the caller's own shell,
# and slurmstepd holding a file under DIR open (slurmstepd loses the tag).
cluster_procs() {
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
