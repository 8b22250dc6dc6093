#!/usr/bin/env bash
# failover_ctld_outage.sh: on a cluster of its own (safe-cluster up --netns, 4 nodes), slurmctld
# is killed under a running 2-node trainer job and stays down for 60 s, and one of the job's
# nodes dies during the outage.
#  - safed logs the outage's errors once each (not once per pass) and acts on nothing while Slurm does not
#    answer: no DOWN, no requeue, no restart from what it cannot see.
#  - Once slurmctld is back, safed catches up: its probes find the dead slurmd, the job is
#    classified node_fault and runs again on healthy nodes, requeued once, its history complete.
# Prints the time from slurmctld's return to the job running again.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

start_own_cluster sfco 4 --netns
start_job_with_saved_start 100000  # the outage is the subject: the job's start is on disk before it
dead=$last_node
log=$dir/log/safed.out
outage_line="retrying (no action until Slurm answers)"

t_kill=$(now_ms)
"$SAFE_CLUSTER_BIN" ctld-kill --dir "$dir" >/dev/null 2>&1
wait_for "grep -qF '$outage_line' $log" 30 "tail -n 5 $log"
lines_before=$(wc -l <"$log")
"$SAFE_CLUSTER_BIN" kill-node --dir "$dir" --node "$dead" >/dev/null 2>&1
sleep $((60 - ($(now_ms) - t_kill) / 1000))  # the outage's length, not a wait for a condition

# The only lines allowed meanwhile: the outage's, each error once (a pass that ran as slurmctld
# died may have logged a timeout, the later ones find the port closed).
during=$(tail -n +"$((lines_before + 1))" "$log" | grep -vF "$outage_line" || true)
[[ -z $during ]] || fail "safed logged or acted while slurmctld was down:"$'\n'"$during"
outage_errors=$(grep -F "$outage_line" "$log" | cut -d' ' -f2-)
[[ -z $(sort <<<"$outage_errors" | uniq -d) ]] || fail "safed logged an outage error more than once:"$'\n'"$outage_errors"

t_back=$(now_ms)
"$SAFE_CLUSTER_BIN" ctld-start --dir "$dir" >/dev/null 2>&1
wait_restarted "$jobid" 1 $((t_back / 1000)) 90
catch_up_ms=$(($(now_ms) - t_back))
new_nodes=$(job_field "$jobid" NodeList)
[[ $(scontrol show hostnames "$new_nodes") != *"$dead"* ]] || fail "job restarted on the dead node $dead"
assert_eq 1 "$(grep -cF 'Slurm reachable again' "$log")" "'reachable again' lines in safed's log"
assert_contains "$(cat "$log")" "node $dead: set DOWN (SaFE-unreachable: slurmd" "safed log"
assert_eq 1 "$(job_field "$jobid" Restarts)" "Slurm's restart count of job $jobid"
assert_eq node_fault "$(safed_job "$jobid" '.attempts[0].class')" "class of attempt 1"
assert_eq 1 "$(safed_job "$jobid" '.failovers | length')" "failovers of job $jobid"
printf 'PASS: failover_ctld_outage: slurmctld down 60 s under job %s on %s, %s died meanwhile -> running on %s %d.%03d s after slurmctld returned\n' \
    "$jobid" "$nodes" "$dead" "$new_nodes" $((catch_up_ms / 1000)) $((catch_up_ms % 1000))
