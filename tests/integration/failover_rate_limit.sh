#!/usr/bin/env bash
# failover_rate_limit.sh: on a cluster of its own with failover.rate_limit_per_minute: 10, a flood
# of 50 jobs failing with the infrastructure exit code 75 must not cause more than 10 requeues in
# the first minute; the rest are deferred (and counted in the metrics), not dropped.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfrl
cat >"$dir/config.yaml" <<'YAML'
failover:
  rate_limit_per_minute: 10
  backoff_initial_s: 1
YAML
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 4 --safe --config "$dir/config.yaml" >/dev/null
use_cluster "$dir"

t0=$(date +%s)
for _ in $(seq 1 50); do
    sbatch --parsable -N1 --safe-retries=1 -o /dev/null --wrap 'exit 75' >/dev/null
done
restarted() { squeue -h -t all -o '%i' | while read -r j; do job_field "$j" Restarts; done | grep -c '^1$' || true; }
# Every job has failed once and safed has seen it once the deferrals are counted.
wait_for "curl -sf \$SAFE_CONTROLLER_URL/metrics | grep -Eq '^safe_failovers_deferred_total.reason=\"rate_limit\". [1-9]'" 40 \
    "curl -s $SAFE_CONTROLLER_URL/metrics | grep safe_failovers; tail $dir/log/safed.out"
sleep 5
n=$(restarted)
elapsed=$(($(date +%s) - t0))
((elapsed < 60)) || fail "the check came too late (${elapsed}s) to tell the first minute's limit"
((n <= 10)) || fail "$n jobs requeued within ${elapsed}s; the limit is 10 per minute"
((n >= 5)) || fail "only $n jobs requeued within ${elapsed}s; expected up to 10"
used=$(safectl status --json | jq '.controller.failovers_last_minute')
((used <= 10)) || fail "safed reports $used failovers in the last minute"

# SIGHUP: a broken config is refused (the old one kept), a good one is taken.
safed=$(pgrep -f "safed --config $dir/safe.yaml" | head -n1)
[[ -n $safed ]] || fail "safed is not running"
echo "failover: {rate_limit_per_minute: many}" >"$dir/safe.yaml"
kill -HUP "$safed"
wait_for "grep -q 'kept the previous config' $dir/log/safed.out" 10 "tail $dir/log/safed.out"
assert_eq 10 "$(safectl status --json | jq .controller.rate_limit_per_minute)" "rate limit after a broken reload"
echo "failover: {rate_limit_per_minute: 100}" >"$dir/safe.yaml"
kill -HUP "$safed"
wait_for "[[ \$(safectl status --json | jq .controller.rate_limit_per_minute) == 100 ]]" 10 "tail $dir/log/safed.out"
echo "PASS: failover_rate_limit (50 failing jobs: $n requeued in the first ${elapsed}s, the rest deferred; SIGHUP reload)"
