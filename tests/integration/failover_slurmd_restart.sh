#!/usr/bin/env bash
# failover_slurmd_restart.sh: on a cluster of its own with a network (safe-cluster up --netns, 3
# nodes), an administrator restarts a node's slurmd (SIGTERM, then start: `systemctl restart
# slurmd`) while a SaFE job runs on the node and another job's prolog is running there. slurmd
# does not exit before that prolog has ended (its GPU query hangs until health.gate_timeout_s,
# 15 s here), so the node refuses connections for several seconds: more than safed's probe window
# (3 failed probes), far less than its restart grace (60 s).
#  - safed says once that the node's slurmd refuses connections (restarting) and does not set it
#    DOWN: the running job goes on, not restarted; the node is in service once slurmd is back.
#  - the job whose prolog ran runs.
# (Before: the node was set DOWN 3 s into the restart and the running job failed over, a retry
# spent.)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfsr
sed '/^health:/a\  gate_timeout_s: 15' "$(dirname "${BASH_SOURCE[0]}")/../cluster/safe.yaml" >"$work/safe.yaml"
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 3 --safe --netns --config "$work/safe.yaml" >/dev/null
use_cluster "$dir"
log=$dir/log/safed.out
node=n1

cat >"$work/job.sh" <<'JOB'
#!/bin/bash
trap '' USR1
while true; do sleep 1; done
JOB
chmod +x "$work/job.sh"
running=$(sbatch --parsable -N1 -w "$node" --gres=gpu:1 --safe-retries=2 -o "$work/running.out" "$work/job.sh")
wait_for "[[ \$(job_field $running JobState) == RUNNING ]]" 30 "scontrol show job $running"
wait_passes 2

# A second job's prolog on the node, its GPU query hung (the simulated GPU library hangs).
safectl inject --node "$node" --gpu 0 --fault hang >/dev/null
prologs() { cluster_pids_of "$dir" safe-prolog; }
starting=$(sbatch --parsable -N1 -w "$node" --gres=gpu:1 --safe-retries=2 -o "$work/starting.out" "$work/job.sh")
wait_for "[[ -n \$(prologs) ]]" 20 "scontrol show job $starting"
# Only that prolog's query hangs: the periodic health checks see a healthy GPU again.
safectl inject --node "$node" --gpu all --fault clear >/dev/null

t0=$(now_ms)
"$SAFE_CLUSTER_BIN" restart-slurmd --dir "$dir" --node "$node" >/dev/null
restart_ms=$(($(now_ms) - t0))
echo "slurmd of $node took $((restart_ms / 1000)) s to restart (it waited for the prolog)"
((restart_ms >= 5000)) || fail "slurmd restarted in $restart_ms ms: the prolog did not hold it up (no test of the probe window)"
wait_for "grep -q 'node $node: slurmd .* refuses connections' $log" 10 "tail -n 20 $log"
wait_for "[[ \$(scontrol show node $node) != *NOT_RESPONDING* ]]" 30 "scontrol show node $node"
wait_for "[[ \$(job_field $starting JobState) == RUNNING ]]" 60 "scontrol show job $starting; tail -n 20 $log"
wait_passes 5
assert_eq 1 "$(grep -c "node $node: slurmd .* refuses connections" "$log")" "restart notes for $node"
[[ $(cat "$log") != *"node $node: set DOWN"* ]] || fail "safed set $node DOWN during a slurmd restart: $(grep "node $node" "$log"; grep -v -e debug -e "Zero Bytes" "$dir/log/slurmd-$node.log" | tail -n 40)"
assert_eq "" "$(node_reason "$node")" "reason of $node"
assert_eq RUNNING "$(job_field "$running" JobState)" "state of job $running"
assert_eq 0 "$(job_field "$running" Restarts)" "restarts of job $running"
scancel "$running" "$starting"
echo "PASS: failover_slurmd_restart (slurmd restarted in $((restart_ms / 1000)) s during a prolog: no DOWN, the job on the node ran on)"
