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
# to FILE, then starts it again; gives up (exit 1) after 60 s. $killer is its pid. The phases are
# under a second apart (safed's next pass acts on what slurmctld just did, and slurmctld starts the
# next run 0.1 s after safed's update), so on a loaded machine a poll and a safe-cluster call are
# too slow: the watcher is woken by inotify (tail -F), at real-time priority where allowed, and
# signals the pid it read beforehand. $kill_mark gets the size of slurmctld's log once it is dead:
# what it logged before the kill.
kill_ctld_after() {
    local from pid
    local -a realtime=()
    from=$(($(wc -l <"$1") + 1))
    pid=$("$SAFE_CLUSTER_BIN" pids --dir "$dir" | awk '$2 ~ /(^|\/)slurmctld$/ {print $1}')
    [[ $pid =~ ^[0-9]+$ ]] || fail "no slurmctld pid in: $("$SAFE_CLUSTER_BIN" pids --dir "$dir")"
    kill_mark=$work/killed-$phase
    if chrt -f 50 true 2>/dev/null; then realtime=(chrt -f 50); fi
    (
        # shellcheck disable=SC2016 # expanded by the inner shell
        timeout 60 ${realtime[@]+"${realtime[@]}"} bash -c 'exec 3< <(exec tail -n +"$1" -F "$3" 2>/dev/null); tail_pid=$!
            grep -m1 -qF -- "$2" <&3 || exit 1
            kill -KILL "$4" || exit 1
            kill "$tail_pid"' _ "$from" "$2" "$1" "$pid" || exit 1
        # Gone, or a zombie (state Z) until whoever inherited it reaps it.
        SECONDS=0
        while [[ $(sed -E 's/.*\) (.).*/\1/' "/proc/$pid/stat" 2>/dev/null) =~ ^[^Z]$ ]]; do
            ((SECONDS < 10)) || exit 1
            sleep 0.05
        done
        stat -c %s "$ctld_log" >"$kill_mark"
        "$SAFE_CLUSTER_BIN" ctld-start --dir "$dir" >/dev/null 2>&1
    ) &
    killer=$!
}

# killed_in_phase JOBID: true unless the killed slurmctld had already placed the job's next run
# (then the run it launched lives on, unknown to the slurmctld that comes back, and Slurm later
# drains a node for a "Duplicate jobid": not the phase this test is about). Slurm's main scheduler
# logs "Allocate JobId=N", its backfill "Started JobId=N".
killed_in_phase() {
    local allocations
    allocations=$(head -c "$(cat "$kill_mark")" "$ctld_log" | grep -cE " (Allocate|Started) JobId=$1 " || true)
    ((allocations == 1))
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
    killed_in_phase "$jobid" || fail "$phase: slurmctld was killed only after it placed job $jobid's next run (the kill came late on this machine): $(grep -F "JobId=$jobid " "$ctld_log" | tail -n 5)"
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
