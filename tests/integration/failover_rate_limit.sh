#!/usr/bin/env bash
# failover_rate_limit.sh: on a cluster of its own with failover.rate_limit_per_minute: 10, a flood
# of 50 jobs failing with the infrastructure exit code 75 must not cause more than 10 requeues in
# the first minute; the rest are deferred (and counted in the metrics), not dropped. The flood is
# one tenant's (root's jobs, no workspace) and uses up what the job-caused failovers may have for
# minutes; another user's job on a node that then fails a health check is failed over at once:
# node faults have a budget of their own.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfrl
{
    cat <<'YAML'
failover:
  rate_limit_per_minute: 10
  backoff_initial_s: 1
workspaces:
  - name: ml
    users: [safe-member]
YAML
    # The test cluster's simulated GPUs and health checker, for the node fault.
    sed -n '/^health:/,$p' "$(dirname "${BASH_SOURCE[0]}")/../cluster/safe.yaml"
} >"$dir/config.yaml"
grep -q '^  backend: sim' "$dir/config.yaml" || fail "no health section taken from tests/cluster/safe.yaml"
ensure_user safe-member
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 4 --safe --config "$dir/config.yaml" >/dev/null
use_cluster "$dir"

t0=$(date +%s)
for _ in $(seq 1 50); do
    sbatch --parsable -N1 --safe-retries=1 -o /dev/null --wrap 'exit 75' >/dev/null
done
restarted_jobs() {
    squeue -h -t all -o '%i' | while read -r j; do if [[ $(job_field "$j" Restarts) == 1 ]]; then echo "$j"; fi; done
}
# Every job has failed once and safed has seen it once the deferrals are counted.
wait_for "curl -sf \$SAFE_CONTROLLER_URL/metrics | grep -Eq '^safe_failovers_deferred_total.reason=\"rate_limit\". [1-9]'" 40 \
    "curl -s $SAFE_CONTROLLER_URL/metrics | grep safe_failovers; tail $dir/log/safed.out"
wait_passes 5  # the passes in which deferred failovers could have gone past the limit
restarted=$(restarted_jobs)
elapsed=$(($(date +%s) - t0))
((elapsed < 60)) || fail "the check came too late (${elapsed}s) to tell the first minute's limit"
# The flood's exit codes are job-caused failovers: root's share, the whole limit while it is the
# only tenant asking. A job that failed on a node that had a fault (a prolog refusal on a loaded
# machine) is a node fault, with a budget of its own; any such, and any job Slurm requeued itself,
# is named, not counted against root.
n=0 others=()
for j in $restarted; do
    if grep -q "job $j attempt 1: infra_transient" "$dir/log/safed.out"; then
        n=$((n + 1))
    else
        others+=("$(grep -m1 "job $j attempt 1:" "$dir/log/safed.out" || echo "job $j: restarted without a failover of safed's")")
    fi
done
((n <= 10)) || fail "$n of the flood's job-caused failovers within ${elapsed}s; the limit is 10 per minute" \
    "(safed's requeues: $(grep -c ': requeue$' "$dir/log/safed.out"); its failed passes and restarts:" \
    "$(grep -E 'reconcile pass failed|safed: started|active:' "$dir/log/safed.out" | head -5))"
((n >= 5)) || fail "only $n of the flood's job-caused failovers within ${elapsed}s; expected up to 10"
((${#others[@]} <= 10)) || fail "more than 10 node-fault failovers in the first minute: ${others[*]}"
((${#others[@]} == 0)) || echo "note: restarted, not as the flood's job-caused failovers: ${others[*]}" >&2
used=$(safectl status --json | jq '.controller.failovers_last_minute')
((used <= 10 + ${#others[@]})) || fail "safed reports $used failovers in the last minute"

# Another tenant's job (safe-member, workspace ml) on a node whose GPU then fails: its failover
# is not queued behind the ~40 deferred ones of the flood.
victim=$(run_as safe-member \
    sbatch --parsable -N1 --safe-workspace=ml --safe-retries=1 -o /dev/null --wrap 'sleep 300')
wait_for "[[ \$(job_field $victim JobState) == RUNNING ]]" 30 "scontrol show job $victim"
node=$(job_field "$victim" NodeList)
safectl inject --node "$node" --gpu 0 --fault ecc >/dev/null
wait_for "[[ \$(sinfo -h -n $node -o %T) == drain* ]]" 20 "sinfo -N -o '%N %T %E'"
drained=$(date +%s)
wait_for "[[ \$(job_field $victim Restarts) == 1 ]]" 20 \
    "scontrol show job $victim; grep 'job $victim' $dir/log/safed.out | tail -5"
pending=$((50 - $(restarted_jobs | wc -l)))
((pending > 0)) || fail "the flood was over before the node fault; the test shows nothing"
grep -q "job $victim: failover deferred" "$dir/log/safed.out" && fail "the node fault's failover was deferred"
victim_s=$(($(date +%s) - drained))

# SIGHUP: a broken config is refused (the old one kept), a good one is taken.
safed=$(cluster_pids_of "$dir" safed | head -n1)
[[ -n $safed ]] || fail "safed is not running"
echo "failover: {rate_limit_per_minute: many}" >"$dir/safe.yaml"
kill -HUP "$safed"
wait_for "grep -q 'kept the previous config' $dir/log/safed.out" 10 "tail $dir/log/safed.out"
assert_eq 10 "$(safectl status --json | jq .controller.rate_limit_per_minute)" "rate limit after a broken reload"
echo "failover: {rate_limit_per_minute: 100}" >"$dir/safe.yaml"
kill -HUP "$safed"
wait_for "[[ \$(safectl status --json | jq .controller.rate_limit_per_minute) == 100 ]]" 10 "tail $dir/log/safed.out"
echo "PASS: failover_rate_limit (50 failing jobs: $n requeued in the first ${elapsed}s, the rest deferred;" \
    "another tenant's node fault failed over ${victim_s}s after the drain while $pending of the flood waited; SIGHUP reload)"
