#!/usr/bin/env bash
# short_test.sh: the goodput benchmark's --short run as a test. It checks what must hold whatever
# the figures: the run ends in time with its three clusters stopped, the JSON has every key, the
# faults were injected into running jobs on every cluster and each one stopped the job it hit, and
# SaFE's own counters agree with Slurm's. It never checks that SaFE beats plain Slurm by some figure.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source-path=SCRIPTDIR source=../../lib/cluster_test.sh
. "$here/../../lib/cluster_test.sh"

json=$(mktemp /tmp/goodput-test.XXXXXX)
log=$(mktemp /tmp/goodput-test-log.XXXXXX)
trap 'rm -f "$json" "$log"' EXIT
t0=$(date +%s)
"$here/run" --short --seed "${GOODPUT_SEED:-1}" --json "$json" 2>&1 | tee "$log" || fail "the benchmark failed"
elapsed=$(($(date +%s) - t0))
((elapsed < 300)) || fail "--short took $elapsed s (it must finish in under 5 minutes)"

# Every cluster stopped and removed.
read -r safe_dir plain_dir elastic_dir < <(sed -n 's/^clusters: SaFE at \([^,]*\), plain at \([^,]*\), elastic at \([^ ]*\) .*/\1 \2 \3/p' "$log")
[[ -n $safe_dir && -n $plain_dir && -n $elastic_dir ]] || fail "the run did not say where its clusters were"
for d in "$safe_dir" "$plain_dir" "$elastic_dir"; do
    [[ ! -e $d ]] || fail "cluster directory $d is left behind"
    [[ -z $(survivors_of "$d") ]] || fail "processes of the cluster at $d survived the run: $(survivors_of "$d")"
done

q() { jq -r "$1" "$json"; }
jq -e . "$json" >/dev/null || fail "not valid JSON: $(cat "$json")"
kinds=(gpu_lost gpu_ecc user_crash hang node_death)
for side in safe plain elastic ratio ratio_elastic ratio_elastic_safe; do
    for key in ettr mttr_s steps_lost jobs_completed user_errors_retried retries_wasted nodes_drained; do
        [[ $(q ".$side | has(\"$key\")") == true ]] || fail "$side lacks $key"
    done
    for k in "${kinds[@]}"; do
        [[ $(q ".$side.mttr_s | has(\"$k\")") == true ]] || fail "$side.mttr_s lacks $k"
    done
done

for side in safe plain elastic; do
    # The first fault comes when every trainer job has been running for a while: it must land.
    assert_eq injected "$(q ".$side.fault_log[0].status")" "status of the first fault on $side"
    injected=$(q "[.$side.fault_log[] | select(.status == \"injected\")] | length")
    hit=$(q "[.$side.fault_log[] | select(.status == \"injected\" and .ranks_hit > 0)] | length")
    ((hit >= 1)) || fail "no fault hit a trainer on $side ($injected injected)"
    # Seen: the attempt a fault hit stopped making progress (a few steps may print as it lands;
    # a job the fault missed would go on for its remaining hundreds of steps).
    stray=$(q "[.$side.fault_log[] | select(.status == \"injected\" and .ranks_hit > 0 and .steps_after_fault > 50)]")
    assert_eq "[]" "$(jq -c . <<<"$stray")" "faults on $side after which the job kept stepping"
    # Sane figures.
    ettr=$(q ".$side.ettr")
    awk -v e="$ettr" 'BEGIN { exit !(e > 0 && e <= 1.02) }' || fail "$side ETTR $ettr is not in (0, 1]"
    (($(q ".$side.jobs_completed") <= $(q ".$side.jobs_total"))) || fail "$side completed more jobs than it ran"
    (($(q ".$side.steps_lost") >= 0)) || fail "$side lost a negative number of steps"
    [[ $(q "[.$side.fault_log[] | select(.mttr_s != null and .mttr_s <= 0)] | length") == 0 ]] ||
        fail "$side has a recovery before its fault: $(q ".$side.fault_log")"
    for k in "${kinds[@]}"; do
        inj=$(q ".$side.faults.$k.injected")
        rec=$(q ".$side.faults.$k.recovered")
        ((rec <= inj)) || fail "$side: more $k faults recovered ($rec) than injected ($inj)"
        has_mttr=0
        [[ $(q ".$side.mttr_s.$k") == null ]] || has_mttr=1
        ((has_mttr == (rec > 0))) || fail "$side: MTTR of $k is $(q ".$side.mttr_s.$k") with $rec recovered"
    done
done

# SaFE's counters, on both of its clusters: every requeue is one of safed's failovers (a grow back
# included); the jobs with a bug are classified user errors and not retried; a GPU fault drains the
# node. (How many infrastructure failures safed took for user errors is a figure of the run, not
# checked here.)
for side in safe elastic; do
    requeues=$(($(q ".$side.requeues") + $(q ".$side.retries_wasted")))
    assert_eq "$requeues" "$(q ".$side.controller.failovers_total")" "safed's failovers vs Slurm's restarts of SaFE jobs ($side)"
    assert_eq 0 "$(q ".$side.user_errors_retried")" "user-error jobs SaFE retried ($side)"
    user_errors=$(q ".$side.controller.user_error_failures_total")
    uerr_jobs=$(q ".$side.user_error_jobs")
    ((user_errors >= uerr_jobs)) || fail "safed ($side) classified $user_errors failures as user errors, fewer than the $uerr_jobs jobs with a bug"
    if (($(q "[.$side.fault_log[] | select(.status == \"injected\" and (.kind | startswith(\"gpu_\")))] | length") > 0)); then
        (($(q ".$side.nodes_drained") >= 1)) || fail "GPU faults were injected on $side's side but no node was drained"
    fi
done
echo "PASS: bench goodput --short ($elapsed s; ETTR SaFE $(q .safe.ettr), elastic $(q .elastic.ettr), plain $(q .plain.ettr))"
