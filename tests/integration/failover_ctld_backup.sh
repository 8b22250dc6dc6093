#!/usr/bin/env bash
# failover_ctld_backup.sh: on a cluster of its own with a backup slurmctld (safe-cluster up --netns
# --backup-ctld, 4 nodes), the primary slurmctld is killed under a running 2-node trainer job and
# the backup takes control; then one of the job's nodes dies.
#  - safed, configured as before (its slurm.conf names both controllers), takes no action while the
#    controllers change hands: no failover, no DOWN.
#  - Under the backup it fails the job over as under the primary: the dead node DOWN, the job
#    classified node_fault and running again on healthy nodes, requeued once.
#  - The primary comes back (`ctld-start`: the backup stops, saving its state, the primary starts
#    from that state, the backup stands by again): the job runs on and completes with one
#    restart, and safed acts no second time.
# Prints the backup's takeover time and the time from the node's death to the job running again.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

start_own_cluster sfcb 4 --netns --backup-ctld
# The backup: its own network namespace and host name, standing by.
backup_pid=$(awk '$1 == "slurmctld-backup" { print $2 }' "$dir/run/daemons")
[[ $(readlink "/proc/$backup_pid/ns/net") != "$(readlink /proc/self/ns/net)" ]] || fail "the backup slurmctld runs in the host's network namespace"
assert_eq safe-ctl2 "$(nsenter -t "$backup_pid" -u hostname)" "the backup slurmctld's host name"
assert_contains "$(scontrol ping)" "Slurmctld(backup) at safe-ctl2 is UP" "scontrol ping"
# 600 steps: the second attempt still runs when the primary comes back. The backup knows what the
# primary saved: the job's start is on disk before the kill.
start_job_with_saved_start 600
dead=$last_node
log=$dir/log/safed.out

takeover=$("$SAFE_CLUSTER_BIN" ctld-failover --dir "$dir" 2>&1) || fail "ctld-failover: $takeover"
takeover=$(sed -n 's/.* is in control \([0-9.]*\) s after.*/\1/p' <<<"$takeover")
assert_eq "RUNNING 0" "$(job_field "$jobid" JobState) $(job_field "$jobid" Restarts)" "job $jobid under the backup"
assert_eq 0 "$(safed_job "$jobid" '.failovers | length')" "failovers of job $jobid while the controllers changed hands"
[[ $(grep -c "set DOWN" "$log" || true) == 0 ]] || fail "safed downed a node while the controllers changed hands: $(grep "set DOWN" "$log")"

t_dead=$(now_ms)
"$SAFE_CLUSTER_BIN" kill-node --dir "$dir" --node "$dead" >/dev/null 2>&1
wait_restarted "$jobid" 1 $((t_dead / 1000)) 60
restart_ms=$(($(now_ms) - t_dead))
new_nodes=$(job_field "$jobid" NodeList)
[[ $(scontrol show hostnames "$new_nodes") != *"$dead"* ]] || fail "job restarted on the dead node $dead"
assert_contains "$(cat "$log")" "node $dead: set DOWN (SaFE-unreachable: slurmd" "safed log"
assert_contains "$(scontrol ping)" "Slurmctld(primary) at $(hostname) is DOWN" "scontrol ping (the backup acted)"
assert_eq node_fault "$(safed_job "$jobid" '.attempts[0].class')" "class of attempt 1"

# The primary returns, from the state the backup saved as it stopped.
primary_log=$dir/log/slurmctld.log
lines_before=$(wc -l <"$primary_log")
"$SAFE_CLUSTER_BIN" ctld-start --dir "$dir" >/dev/null 2>&1
wait_for "tail -n +$((lines_before + 1)) $primary_log | grep -q 'Running as primary controller'" 60 "tail -n 20 $primary_log"
wait_for "[[ \$(job_field $jobid JobState) == COMPLETED ]]" 120 "scontrol show job $jobid; tail -n 5 $work/out; tail -n 20 $log"
assert_contains "$(scontrol ping)" "Slurmctld(primary) at $(hostname) is UP" "scontrol ping"
wait_for "scontrol ping | grep -q 'Slurmctld(backup) at safe-ctl2 is UP'" 30 "scontrol ping"  # standing by again
assert_eq 1 "$(job_field "$jobid" Restarts)" "Slurm's restart count of job $jobid"
assert_eq 1 "$(safed_job "$jobid" '.failovers | length')" "failovers of job $jobid"
assert_eq 1 "$(grep -c "node $dead: set DOWN" "$log")" "DOWNs of $dead in safed's log"
assert_contains "$(cat "$work/out")" "done 600 steps attempt 2" "job output"
# down leaves none of the backup's namespace and link behind.
assert_contains "$(awk '$1 == "netns" { print $2 }' "$dir/run/net")" "$dir/run/netns/ctl2" "namespaces recorded"
down_leaves_no_network
printf 'PASS: failover_ctld_backup: backup slurmctld in control %s s after the primary died; under it, %s died under job %s on %s -> running on %s after %d.%03d s; completed under the primary again, one restart\n' \
    "$takeover" "$dead" "$jobid" "$nodes" "$new_nodes" $((restart_ms / 1000)) $((restart_ms % 1000))
