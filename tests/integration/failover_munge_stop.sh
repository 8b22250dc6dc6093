#!/usr/bin/env bash
# failover_munge_stop.sh: on a cluster of its own with a network (safe-cluster up --netns, 3
# nodes, each with a munged of its own), munged stops on the node a SaFE job runs on. slurmd
# there can no longer check a credential: it rejects slurmctld's pings, and Slurm sets the node
# DOWN (Not responding) within a ping and fails the job there. Its slurmd still answers safed's
# probe. With failover.lemon_faults 1, any fault safed counted would quarantine the node.
#  - safed says the node is no machine fault (its slurmd answers; slurmctld cannot talk with it:
#    munged...), counts no fault toward a quarantine and does not quarantine it (no false drain);
#  - the job is failed over once and runs again on another node;
#  - munged starts again: Slurm returns the node to service by itself (ReturnToService=2), no one
#    resumes it.
# (Before: safed recorded "down: Not responding" as a node fault; with lemon_faults 1 it
# quarantined a node whose hardware is fine.) Slurm 25.11 and 26.05 keep such a node in service while a
# job runs on it: there the test checks that nothing is counted, drained or restarted.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfms
{
    cat "$(dirname "${BASH_SOURCE[0]}")/../cluster/safe.yaml"
    printf 'failover:\n  lemon_faults: 1\n'
} >"$work/safe.yaml"
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 3 --safe --netns --config "$work/safe.yaml" >/dev/null
use_cluster "$dir"
log=$dir/log/safed.out

start_idle_job

t0_s=$(date +%s)
"$SAFE_CLUSTER_BIN" munge-stop --dir "$dir" --node "$node" >/dev/null
# slurmd rejects slurmctld's pings from now on.
wait_for "grep -q 'REQUEST_PING has authentication error' $dir/log/slurmd-$node.log" 30 "tail -n 5 $dir/log/slurmd-$node.log"
version=$(slurmctld -V | awk '{ print $2 }')
if [[ $version =~ ^([0-9]+)\.([0-9]+) ]] && ((10#${BASH_REMATCH[1]} * 100 + 10#${BASH_REMATCH[2]} >= 2511)); then
    # Slurm 25.11 and 26.05 keep the node in service all the same while the job's steps run
    # there (they log "Node n1 now responding" every ping; measured): there is no DOWN to
    # classify. Nothing may be counted, drained or restarted.
    wait_passes 10
    [[ $(scontrol show node "$node") != *DOWN* ]] || fail "Slurm $version set $node DOWN: the test's premise changed"
    "$SAFE_CLUSTER_BIN" munge-start --dir "$dir" --node "$node" >/dev/null
    wait_passes 3
    [[ $(cat "$log") != *"node $node: fault recorded"* ]] || fail "safed recorded a fault: $(grep "node $node" "$log")"
    assert_eq "" "$(node_reason "$node")" "reason of $node"
    assert_eq 0 "$(job_field "$job" Restarts)" "restarts of job $job"
    assert_eq RUNNING "$(job_field "$job" JobState)" "state of job $job"
    scancel "$job"
    echo "PASS: failover_munge_stop (Slurm $version kept $node in service with munged stopped under a job; nothing counted or drained)"
    exit 0
fi
wait_for "[[ \$(scontrol show node $node) == *DOWN* ]]" 30 "scontrol show node $node"
echo "Slurm set $node DOWN: $(node_reason "$node")"
wait_for "grep -q 'node $node: not a machine fault: Slurm set it DOWN .* but its slurmd answers safed' $log" 15 "tail -n 20 $log"
grep "node $node: not a machine fault" "$log" | head -n1 | grep -q "munged stopped or failing on the node" ||
    fail "safed's line does not name munged: $(grep "node $node" "$log")"
wait_restarted "$job" 1 "$t0_s" 60
[[ $(job_field "$job" NodeList) != "$node" ]] || fail "job $job runs again on $node, which Slurm has DOWN"

"$SAFE_CLUSTER_BIN" munge-start --dir "$dir" --node "$node" >/dev/null
# Slurm pings DOWN nodes every SlurmdTimeout/3 or so; ReturnToService=2 returns one that answers.
wait_for "[[ \$(scontrol show node $node) =~ State=IDLE[[:space:]] ]]" 60 "scontrol show node $node; tail -n 20 $log"
wait_passes 3
[[ $(cat "$log") != *"SaFE-quarantine"* ]] || fail "safed quarantined a node: $(grep -i quarantine "$log")"
assert_eq "" "$(node_reason "$node")" "reason of $node"
assert_eq 1 "$(job_field "$job" Restarts)" "restarts of job $job"
assert_eq RUNNING "$(job_field "$job" JobState)" "state of job $job"
scancel "$job"
echo "PASS: failover_munge_stop (munged stopped on $node: no fault counted, the job ran again elsewhere, the node back by itself)"
