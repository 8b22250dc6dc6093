#!/usr/bin/env bash
# failover_node_death.sh: on a cluster of its own (4 nodes, SaFE), one node dies (safe-cluster
# kill-node: its processes killed, its slurmd port answering nothing, as a machine that lost
# power) under a running 2-node trainer job. safed's slurmd probes find it dead and set the node DOWN
# (long before Slurm's own SlurmdTimeout would), Slurm requeues the job with its hold (the job
# credential's lifetime: Slurm's default 120 s on this cluster of its own), and
# safed starts it at once on healthy nodes, excluding the dead one. The test checks that the
# failover rests on safed's probe evidence (the SaFE-unreachable reason), not on Slurm's timeout,
# and that safed returns the node to service once its slurmd is back. Prints the MTTR and its parts.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfnd
# ReturnToService=1: Slurm itself returns only nodes it found not responding, so the dead node
# comes back only if safed lifts its own DOWN (with the test cluster's usual 2 Slurm would).
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 4 --safe --extra-conf ReturnToService=1 >/dev/null
use_cluster "$dir"
write_trainer_script "$work/job.sh"

jobid=$(sbatch --parsable -N2 --gpus-per-node=1 --safe-retries=2 --safe-ckpt-dir="$work/ckpt" \
    -o "$work/out" "$work/job.sh" --steps 100000 --rate 20 --ckpt-every 20)
wait_for "[[ \$(last_step_of_attempt $work/out 1) -ge 25 ]]" 30 "scontrol show job $jobid; cat $work/out"
nodes=$(job_field "$jobid" NodeList)
# The node that is not the batch host: its task dies with it, while the batch host's part is
# stopped by the requeue.
dead=$(scontrol show hostnames "$nodes" | tail -n1)

t0=$(now_ms)
"$SAFE_CLUSTER_BIN" kill-node --dir "$dir" --node "$dead" 2>/dev/null
wait_for "[[ \$(job_field $jobid Restarts) == 1 ]]" 90 "scontrol show job $jobid; sinfo -N"
t_requeued=$(now_ms)
wait_restarted "$jobid" 1 $((t0 / 1000)) 30
t_running=$(now_ms)

new_nodes=$(job_field "$jobid" NodeList)
[[ $(scontrol show hostnames "$new_nodes") != *"$dead"* ]] || fail "job restarted on the dead node $dead"
assert_contains "$(job_field "$jobid" ExcNodeList)" "$dead" "ExcNodeList"
comment=$(admin_comment "$jobid")
assert_contains "$comment" "retries=1/2" "AdminComment"
assert_contains "$comment" "last=node_fault $dead" "AdminComment"
# Found by safed's probes, not by Slurm's SlurmdTimeout ("Not responding"): the evidence names
# the probes, in the job's classification and in safed's action log.
assert_contains "$comment" "SaFE-unreachable: slurmd 127.0.0.1:" "AdminComment"
assert_contains "$(safed_job "$jobid" '.attempts[0].evidence')" "SaFE-unreachable: slurmd" "safed's attempt evidence"
assert_contains "$(cat "$SAFE_CLUSTER_DIR/log/safed.out")" "node $dead: set DOWN (SaFE-unreachable: slurmd" "safed log"
wait_for "[[ \$(first_step_of_attempt $work/out 2) -ge 20 ]]" 30 "cat $work/out"
resumed=$(first_step_of_attempt "$work/out" 2)
mttr=$((t_running - t0))
detect=$((t_requeued - t0))
restart=$((t_running - t_requeued))
((restart < 15000)) || fail "SaFE took $restart ms from Slurm's requeue to running (Slurm's own hold is ~120 s)"

# The machine comes back: the node must not stay DOWN for SaFE's reason; safed resumes it.
"$SAFE_CLUSTER_BIN" start-node --dir "$dir" --node "$dead" 2>/dev/null
in_service() { [[ $(sinfo -h -n "$1" -o %T) =~ ^(idle|mixed|allocated)$ ]]; }
wait_for "in_service $dead" 60 "sinfo -N -o '%N %T %E'; tail -n 5 $SAFE_CLUSTER_DIR/log/safed.out"
assert_contains "$(cat "$SAFE_CLUSTER_DIR/log/safed.out")" "node $dead: resumed, slurmd 127.0.0.1:" "safed log"
metrics=$(safed_metrics)
assert_contains "$metrics" "safe_nodes_set_down_total 1" "metrics"
assert_contains "$metrics" "safe_nodes_resumed_total 1" "metrics"
printf 'PASS: failover_node_death: %s died under job %s (%s) -> running on %s after %d.%d s (MTTR; detection and requeue %d.%d s, SaFE restart %d.%d s), resumed at step %d; %s resumed by safed once its slurmd was back\n' \
    "$dead" "$jobid" "$nodes" "$new_nodes" $((mttr / 1000)) $((mttr % 1000 / 100)) $((detect / 1000)) \
    $((detect % 1000 / 100)) $((restart / 1000)) $((restart % 1000 / 100)) "$resumed" "$dead"
