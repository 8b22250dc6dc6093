#!/usr/bin/env bash
# failover_ctld_phases.sh: on a 4-node SaFE cluster of its own, slurmctld is SIGKILLed at each
# phase of a failover and started again at once (from what it had saved). Each time a 2-node
# trainer job loses a node to a GPU fault (the health checker drains it), and slurmctld dies:
#   signal   right after safed's checkpoint signal (safed's requeue then meets no controller);
#   requeue  right after slurmctld requeued the job (it may come back not knowing it did);
#   restart  right after safed's update with the job's exclusions and start time.
# Each time: the job is requeued exactly once (Slurm's restart count 1, one retry used, one
# failover in safed's history), runs again on healthy nodes within 30 s of the fault and resumes
# from its checkpoint. Prints, per phase, the time from the fault to the job running again.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

# Every phase breaks a node of the job, often the same one (and a drain slurmctld lost is counted
# again): no quarantine of it as a lemon here.
config=$(mktemp /tmp/sfcp-safe.XXXXXX.yaml)
{ cat "$(dirname "${BASH_SOURCE[0]}")/../cluster/safe.yaml"; printf 'failover:\n  lemon_faults: 1000\n'; } >"$config"
start_own_cluster sfcp 4 --config "$config"
rm -f "$config"  # up copied it
write_trainer_script "$work/job.sh"
log=$dir/log/safed.out
ctld_log=$dir/log/slurmctld.log

# kill_ctld_after FILE TEXT: in the background, SIGKILLs slurmctld once a line with TEXT is added
# to FILE (polled every 50 ms), then starts it again; gives up (exit 1) after 60 s. $killer is its pid.
kill_ctld_after() {
    local from
    from=$(($(wc -l <"$1") + 1))
    (
        SECONDS=0
        until tail -n +"$from" "$1" | grep -qF -- "$2"; do
            ((SECONDS < 60)) || exit 1
            sleep 0.05
        done
        "$SAFE_CLUSTER_BIN" ctld-kill --dir "$dir" >/dev/null 2>&1
        "$SAFE_CLUSTER_BIN" ctld-start --dir "$dir" >/dev/null 2>&1
    ) &
    killer=$!
}

report=""
for phase in signal requeue restart; do
    ckpt=$work/ckpt-$phase out=$work/out-$phase
    jobid=$(sbatch --parsable -N2 --safe-retries=2 --safe-ckpt-dir="$ckpt" --safe-ckpt-signal=USR1@30 -o "$out" \
        "$work/job.sh" --steps 100000 --rate 10 --ckpt-every 50)
    wait_for "[[ \$(last_step_of_attempt $out 1) -ge 20 ]]" 40 "scontrol show job $jobid; cat $out"
    bad=$(scontrol show hostnames "$(job_field "$jobid" NodeList)" | tail -n1)
    # A killed slurmctld comes back from what it saved: the job's start is on disk first.
    wait_for "(( \$(stat -c %Y $dir/state/job_state) > $(date -d "$(job_field "$jobid" StartTime)" +%s) ))" 30 \
        "ls -l --full-time $dir/state"
    case $phase in
    signal) kill_ctld_after "$log" "job $jobid: checkpoint signal" ;;
    requeue) kill_ctld_after "$ctld_log" "Requeuing JobId=$jobid" ;;
    restart) kill_ctld_after "$ctld_log" "_slurm_rpc_update_job: complete JobId=$jobid" ;;
    esac
    t0=$(now_ms)
    safectl inject --node "$bad" --gpu 0 --fault ecc >/dev/null
    wait "$killer" || fail "$phase: slurmctld was not killed and started again"
    wait_restarted "$jobid" 1 $((t0 / 1000)) 30
    mttr_ms=$(($(now_ms) - t0))
    [[ $(scontrol show hostnames "$(job_field "$jobid" NodeList)") != *"$bad"* ]] ||
        fail "$phase: job $jobid restarted on the faulty node $bad"
    assert_contains "$(admin_comment "$jobid")" "retries=1/2" "$phase: AdminComment"
    assert_eq 1 "$(safed_job "$jobid" '.failovers | length')" "$phase: failovers of job $jobid"
    assert_eq node_fault "$(safed_job "$jobid" '.attempts[0].class')" "$phase: class of attempt 1"
    wait_for "grep -q 'attempt 2\$' $out" 30 "cat $out"
    assert_contains "$(grep -m1 ' attempt 2$' "$out")" "resumed from step" "$phase: the second attempt's first line"
    # What safed did again because slurmctld came back without it (it depends on what slurmctld
    # had saved when it was killed).
    redone=$(grep -E "job $jobid: (the requeue is lost|requeue: again|start again: slurmctld lost)" "$log" |
        sed -E 's/.*(the requeue is lost|requeue: again|start again).*/\1/' | sed -e 's/the requeue is lost/requeue again/' -e 's/requeue: again/requeue again/' |
        paste -sd, - || true)
    report+="$phase $((mttr_ms / 1000)).$((mttr_ms % 1000 / 100)) s${redone:+ (safed redid: $redone)}; "

    # No second requeue follows: still the one restart after safed's next passes.
    wait_passes 3
    assert_eq "RUNNING 1" "$(job_field "$jobid" JobState) $(job_field "$jobid" Restarts)" "$phase: job $jobid"
    scancel "$jobid"
    safectl inject --node "$bad" --gpu 0 --fault clear >/dev/null
    all_nodes_in_service 60
done
printf 'PASS: failover_ctld_phases: slurmctld killed at each phase, the job running again after: %s\n' "${report%; }"
