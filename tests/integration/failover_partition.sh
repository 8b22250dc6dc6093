#!/usr/bin/env bash
# failover_partition.sh: on a cluster of its own with a network (safe-cluster up --netns, 4
# nodes), the node that runs the checkpoint-writing rank of a 2-node trainer job is cut off: its
# link goes down, its slurmd lives on, unreachable. (failover_freeze.sh runs this with
# SAFE_CUT_FAULT=freeze: the node's slurmd is stopped instead, a hung slurmd whose jobs run on;
# first for less than safed's probe window, which must down nothing.)
#  - safed's probes find it silent and set it DOWN; the job runs again on two other nodes, once.
#  - The cut-off attempt runs on and goes on writing checkpoints into the shared checkpoint
#    directory. None of them may become SAFE_RESUME_FROM: the next attempt resumes from the
#    checkpoint the first attempt's fence names (.safe-fence/job-ID.attempt-1, written before the
#    restart), and a job started later on the same directory skips the stale ones too.
#  - When the link heals (the slurmd is thawed), Slurm kills the stale steps (the node registers
#    with a job that runs elsewhere now) and the node comes back into service only through
#    safed's resume: its DRAIN keeps it out when Slurm's ReturnToService=2 would return it.
# Prints the time to run again, and after the heal the time until the stale steps were gone and
# until the node was back.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

fault=${SAFE_CUT_FAULT:-partition}
case $fault in
    partition) cut_verb=partition heal_verb=heal ;;
    freeze) cut_verb=freeze heal_verb=thaw ;;
    *) fail "SAFE_CUT_FAULT=$fault: partition or freeze" ;;
esac
start_own_cluster sfpt 4 --netns
write_trainer_script "$work/job.sh"
ckpt=$work/ckpt
jobid=$(sbatch --parsable -N2 --safe-retries=2 --safe-ckpt-dir="$ckpt" --safe-ckpt-signal=USR1@2 -o "$work/out" \
    "$work/job.sh" --steps 100000 --rate 10 --ckpt-every 10 --ckpt-rank 1)
wait_for "[[ \$(last_step_of_attempt $work/out 1) -ge 35 ]]" 40 "scontrol show job $jobid; cat $work/out"
nodes=$(job_field "$jobid" NodeList)
cut=$(scontrol show hostnames "$nodes" | tail -n1)  # rank 1, the writer

# stale_pids: the first attempt's trainers still running (on the cut-off node).
stale_pids() {
    local pid
    for pid in $(cluster_pids_of "$dir" safe-trainer); do
        grep -qzxF "SLURM_JOB_ID=$jobid" "/proc/$pid/environ" 2>/dev/null || continue
        grep -qzxF "SAFE_ATTEMPT=1" "/proc/$pid/environ" 2>/dev/null && echo "$pid"
    done
    return 0
}
[[ -n $(stale_pids) ]] || fail "no trainer of job $jobid's first attempt found"

if [[ $fault == freeze ]]; then
    # Slow, not dead: stopped for 1 s, less than the probe window (3 failed probes 1 s apart, each
    # given 1 s), the node stays in service and the job runs on.
    "$SAFE_CLUSTER_BIN" freeze --dir "$dir" --node "$cut" >/dev/null
    sleep 1  # the fault's length, not a wait for a condition
    "$SAFE_CLUSTER_BIN" thaw --dir "$dir" --node "$cut" >/dev/null
    # Four more probe rounds.
    wait_for "(( \$(last_step_of_attempt $work/out 1) >= $(last_step_of_attempt "$work/out" 1) + 40 ))" 30 \
        "tail -n 3 $work/out"
    [[ $(cat "$dir/log/safed.out") != *"node $cut: set DOWN"* ]] || fail "a 1 s freeze of $cut's slurmd downed it"
    assert_eq 0 "$(job_field "$jobid" Restarts)" "restarts of job $jobid after a 1 s freeze"
fi

t0=$(now_ms)
"$SAFE_CLUSTER_BIN" "$cut_verb" --dir "$dir" --node "$cut" >/dev/null
wait_restarted "$jobid" 1 $((t0 / 1000)) 60
restart_ms=$(($(now_ms) - t0))
new_nodes=$(job_field "$jobid" NodeList)
if [[ $fault == freeze ]]; then
    assert_contains "$(cat "$dir/log/safed.out")" "node $cut: set DOWN (SaFE-unreachable: slurmd" "safed log"
    assert_contains "$(grep "node $cut: set DOWN" "$dir/log/safed.out")" "accepted, no reply" "the stopped slurmd's probes"
fi
[[ $(scontrol show hostnames "$new_nodes") != *"$cut"* ]] || fail "job restarted on the cut-off node $cut"

# The fence safed wrote before it let the job start again.
fence=$ckpt/.safe-fence/job-$jobid.attempt-1
[[ -f $fence ]] || fail "no fence for attempt 1 in $ckpt/.safe-fence: $(ls -la "$ckpt/.safe-fence" 2>&1)"
fenced=$(sed -n 's/^checkpoint=//p' "$fence")
[[ $fenced == step-*-attempt-1 ]] || fail "the fence names '$fenced', not a checkpoint of attempt 1"
assert_contains "$(cat "$dir/log/safed.out")" "job $jobid: checkpoint fence: attempt 1: only its checkpoint $fenced counts" \
    "safed log"
wait_for "grep -q 'attempt 2\$' $work/out" 30 "cat $work/out"
resumed=$(grep -m1 ' attempt 2$' "$work/out")  # the attempt's first line
assert_contains "$resumed" "($ckpt/$fenced)" "the second attempt's resume point"
[[ -n $(stale_pids) ]] || fail "the cut-off attempt stopped: nothing left to fence against"

# stale_after ARTIFACT: checkpoints of attempt 1 completed after ARTIFACT (a file) was written.
stale_after() {
    local m
    for m in "$ckpt"/step-*-attempt-1/COMPLETE; do [[ $m -nt $1 ]] && echo "${m%/COMPLETE}"; done
    return 0
}
# The stale attempt writes on: a checkpoint newer than the fence, and newer than the current
# attempt's latest, must still lose to the current attempt's.
wait_for "compgen -G '$ckpt/step-*-attempt-2/COMPLETE' >/dev/null" 30 "ls $ckpt"
current=$(ls -td "$ckpt"/step-*-attempt-2 | head -n1)
wait_for "[[ -n \$(stale_after $current/COMPLETE) ]]" 30 "ls -lt --full-time $ckpt"
stale=$(stale_after "$current/COMPLETE" | head -n1)
[[ $(cat "$stale/COMPLETE") == "job=$jobid attempt=1" ]] || fail "$stale/COMPLETE: $(cat "$stale/COMPLETE")"
spare=$(sinfo -h -N -t idle -o %N | head -n1)
[[ -n $spare ]] || fail "no idle node for the later job: $(sinfo -N)"
later=$(srun -N1 -w "$spare" --safe-ckpt-dir="$ckpt" printenv SAFE_RESUME_FROM)
[[ $later == "$ckpt"/step-*-attempt-2 ]] ||
    fail "a later job on $ckpt resumes from '$later', not from a checkpoint of the current attempt (a stale one: $stale)"

# The link heals: Slurm kills the stale steps when the node registers; the node stays out of
# service until safed resumes it.
t1=$(now_ms)
"$SAFE_CLUSTER_BIN" "$heal_verb" --dir "$dir" --node "$cut" >/dev/null
wait_for "[[ -z \$(stale_pids) ]]" 60 "ps -o pid,args -p $(stale_pids | tr '\n' ',')0"
killed_ms=$(($(now_ms) - t1))
in_service() { [[ $(sinfo -h -n "$cut" -o %T) =~ ^(idle|mixed|allocated|completing)$ ]]; }
wait_for in_service 60 "sinfo -N -o '%N %T %E'; tail -n 20 $dir/log/safed.out"
back_ms=$(($(now_ms) - t1))
# safed logs its resume right after Slurm took it.
wait_for "grep -q 'node $cut: resumed' $dir/log/safed.out" 5 \
    "sinfo -N -o '%N %T %E'; tail -n 20 $dir/log/safed.out; echo '$cut came back without safed (ReturnToService?)'"

assert_eq 1 "$(job_field "$jobid" Restarts)" "Slurm's restart count of job $jobid"
[[ $(job_field "$jobid" JobState) == RUNNING ]] || fail "job $jobid: $(job_field "$jobid" JobState)"
printf 'PASS: failover_%s: job %s on %s, %s cut off (%s) -> running on %s after %d.%03d s, resumed from %s (fenced); after the %s the stale steps were gone in %d.%03d s and %s was back (safed resumed it) in %d.%03d s\n' \
    "$fault" "$jobid" "$nodes" "$cut" "$cut_verb" "$new_nodes" $((restart_ms / 1000)) $((restart_ms % 1000)) "$fenced" "$heal_verb" \
    $((killed_ms / 1000)) $((killed_ms % 1000)) "$cut" $((back_ms / 1000)) $((back_ms % 1000))
