#!/usr/bin/env bash
# failover_state_disk_full.sh: on a cluster of its own with a network (safe-cluster up --netns, 3
# nodes), the disks that hold safed's state store (controller.state_dir) and the health checker's
# history (health.state_dir) fill up while a SaFE job runs, and a GPU fault strikes under it.
#  - The health checker drains the faulty node all the same (a critical fault needs no history)
#    and says on each run that it cannot save its history; it drains no healthy node.
#  - safed cannot record the failover, so it takes no action (an action it could not record
#    could be repeated after a restart): no signal, no requeue. It says so once, not every pass.
#  - Once space is freed, safed goes on by itself: the job is requeued once and runs again
#    elsewhere, and its history is complete (one failover, the attempt classified node_fault).
#  - The fault cleared, the checker resumes the node from the history it kept.
# The full disks are small tmpfs file systems mounted over the two state directories and filled.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

start_own_cluster sfdf 3 --netns
log=$dir/log/safed.out
mounts=()
# The cluster stops first: its safed holds the store open on a mount.
end_test() {
    "$SAFE_CLUSTER_BIN" down --dir "$dir" >/dev/null 2>&1 || true
    local m
    for m in "${mounts[@]}"; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$dir" "$work"
}
trap end_test EXIT

stop_safed
for d in safed health; do
    cp -a "$dir/$d" "$work/$d.before"
    mount -t tmpfs -o size=8m,mode=0755 tmpfs "$dir/$d"
    mounts+=("$dir/$d")
    cp -a "$work/$d.before/." "$dir/$d/"
done
(setsid "${safed_cmd[@]}" </dev/null >>"$log" 2>&1 &)
wait_for "[[ -n \$(safed_pid) ]]" 10
wait_passes 3

cat >"$work/job.sh" <<'JOB'
#!/bin/bash
trap '' USR1
while true; do sleep 1; done
JOB
chmod +x "$work/job.sh"
jobid=$(sbatch --parsable -N1 --safe-retries=2 --safe-ckpt-signal=USR1@2 -o "$work/out" "$work/job.sh")
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 30 "scontrol show job $jobid"
wait_passes 2
node=$(job_field "$jobid" NodeList)
mapfile -t others < <(sinfo -h -N -o %N | sort -u | grep -vx "$node")

# Both disks full.
for m in "${mounts[@]}"; do
    cat /dev/zero >"$m/filler" 2>/dev/null || true
done
failed_passes() { safed_metrics | awk '$1 == "safe_reconcile_failed_passes_total" { print $2 }'; }
safectl inject --node "$node" --gpu 1 --fault ecc >/dev/null
wait_for "[[ \$(node_reason $node) == 'SaFE: gpu1 uncorrectable ECC=2' ]]" 30 "scontrol show node $node"
wait_for "grep -q 'reconcile pass failed: .*disk is full' $log" 20 "tail -n 20 $log"
before=$(failed_passes)
wait_for "(( \$(failed_passes) >= $before + 10 ))" 40 "safed_metrics | grep failed_passes; tail -n 5 $log"
assert_eq 1 "$(grep -c 'reconcile pass failed' "$log")" "pass failures logged (once while the error repeats)"
assert_contains "$(grep 'reconcile pass failed' "$log")" "free space under $dir/safed" "safed's log line"
echo "safed: $(grep "reconcile pass failed" "$log")"
[[ $(cat "$log") != *"job $jobid: checkpoint signal"* ]] || fail "safed signalled job $jobid without recording it"
assert_eq 0 "$(job_field "$jobid" Restarts)" "restarts of job $jobid while safed cannot record"
assert_eq RUNNING "$(job_field "$jobid" JobState)" "state of job $jobid while safed cannot record"
# The checker says why its counts stand still (here in a run by hand; slurmd's runs say it in syslog).
checker_run() { safe-healthcheck --node "${others[0]}" --no-slurm 2>&1 || true; }
wait_for "[[ \$(checker_run) == *'history not saved: $dir/health/'*'No space left on device'* ]]" 20 "checker_run"
for n in "${others[@]}"; do
    [[ -z $(node_reason "$n") ]] || fail "$n was drained while the state disks were full: $(node_reason "$n")"
done

# Space again: safed goes on by itself.
for m in "${mounts[@]}"; do rm -f "$m/filler"; done
freed=$(now_ms)
wait_for "grep -q 'reconcile passes succeed again' $log" 20 "tail -n 20 $log"
wait_restarted "$jobid" 1 0 40
echo "job $jobid running again $((($(now_ms) - freed) / 1000)) s after the space was freed"
assert_eq 1 "$(safed_job "$jobid" '.failovers | length')" "failovers of job $jobid"
assert_eq node_fault "$(safed_job "$jobid" '.failovers[0].class')" "class of the failover"
assert_eq 1 "$(grep -c "job $jobid: requeue\$" "$log")" "requeues of job $jobid"
# The fault cleared: the checker resumes the node from its history.
safectl inject --node "$node" --gpu 1 --fault clear >/dev/null
wait_for "[[ -z \$(node_reason $node) ]]" 60 "scontrol show node $node; cat $dir/health/$node.json"
for n in "${others[@]}"; do
    [[ -z $(node_reason "$n") ]] || fail "$n is drained: $(node_reason "$n")"
done
scancel "$jobid"
echo "PASS: failover_state_disk_full (no action while safed could not record, one log line; one requeue once the space was back)"
