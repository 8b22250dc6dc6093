#!/usr/bin/env bash
# failover_elastic.sh: shrink and continue, grow back (--safe-min-nodes) on a full cluster of its
# own: 5 nodes, a 4-node SaFE trainer job (--safe-min-nodes=2 --safe-node-multiple=2) and a
# non-SaFE job on the fifth; failover.shrink_after_s is 5. Then:
#  - GPU faults on two of the job's nodes: it is checkpointed and requeued, waits for 4 nodes for
#    shrink_after_s, and runs on the 2 it can have, its tasks told SAFE_NNODES=2 of
#    SAFE_FULL_NNODES=4;
#  - the nodes are repaired (their checks pass): it is checkpointed and runs on 4 again, at no
#    cost of a retry;
#  - the trainer lost no work beyond its checkpoints at either restart;
#  - a job without the option, in the same situation, waits for its 4 nodes as before.
# Prints the times.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfel
cat "$(dirname "${BASH_SOURCE[0]}")/../cluster/safe.yaml" - >"$work/safe.yaml" <<'EOF2'
failover:
  backoff_initial_s: 0
  shrink_after_s: 5
EOF2
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 5 --safe --config "$work/safe.yaml" >/dev/null
use_cluster "$dir"
chmod 0777 "$work"
jobs_to_cancel=""
trap 'for n in $bad; do safectl inject --node "$n" --gpu 0 --fault clear >/dev/null 2>&1 || true; done
      [[ -z $jobs_to_cancel ]] || scancel $jobs_to_cancel 2>/dev/null; end_own_cluster' EXIT
bad=""

# Refused at submission: what SaFE could not resize.
refused=$(sbatch -N4 --ntasks-per-node=1 --safe-min-nodes=2 --wrap true 2>&1) &&
    fail "a task-count job was accepted with --safe-min-nodes: $refused"
assert_contains "$refused" "needs a job that asks for nodes, not tasks" "sbatch"
refused=$(sbatch -N4 --safe-min-nodes=6 --wrap true 2>&1) && fail "--safe-min-nodes over -N was accepted: $refused"
assert_contains "$refused" "is more than the job's 4 node(s)" "sbatch"

cat >"$work/job.sh" <<'JOB'
#!/bin/bash
trap '' USR1
echo "size $SAFE_NNODES of $SAFE_FULL_NNODES attempt $SAFE_ATTEMPT"
srun --ntasks-per-node=1 safe-trainer "$@"
JOB
chmod +x "$work/job.sh"
jobid=$(sbatch --parsable -N4 --exclusive --safe-min-nodes=2 --safe-node-multiple=2 --safe-retries=3 \
    --safe-ckpt-dir="$work/ckpt" --safe-ckpt-signal=USR1@30 -o "$work/out" "$work/job.sh" \
    --steps 100000 --rate 20 --ckpt-every 50)
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 30 "scontrol show job $jobid"
filler=$(sbatch --parsable --exclusive -N1 -o /dev/null --wrap 'sleep 3600')
jobs_to_cancel="$jobid $filler"
wait_for "[[ \$(job_field $filler JobState) == RUNNING ]]" 30 "squeue"
wait_for "[[ \$(last_step_of_attempt $work/out 1) -ge 60 ]]" 30 "cat $work/out"
assert_contains "$(cat "$work/out")" "size 4 of 4 attempt 1" "the job's output"

# 1. Two of its nodes fail: it runs on the other two after shrink_after_s.
bad=$(scontrol show hostnames "$(job_field "$jobid" NodeList)" | tail -n2 | xargs)
fault=$(date +%s)
for n in $bad; do safectl inject --node "$n" --gpu 0 --fault ecc >/dev/null; done
wait_for "[[ \$(job_field $jobid Restarts) == 1 && \$(job_field $jobid JobState) == RUNNING ]]" 60 \
    "scontrol show job $jobid; sinfo -N; tail -n 20 $SAFE_CLUSTER_DIR/log/safed.out"
shrunk=$(($(date +%s) - fault))
assert_eq "2" "$(job_field "$jobid" NumNodes | cut -d- -f1)" "the shrunk job's node count"
for n in $(scontrol show hostnames "$(job_field "$jobid" NodeList)"); do
    [[ " $bad " != *" $n "* ]] || fail "the shrunk job runs on the failed node $n"
done
wait_for "grep -q 'size 2 of 4 attempt 2' $work/out" 15 "cat $work/out"
# At its restart, or while it waited in the queue after it.
assert_contains "$(tail -n 40 "$SAFE_CLUSTER_DIR/log/safed.out")" "NumNodes=2" "safed's log"
((shrunk >= 5)) || fail "the job ran on fewer nodes ${shrunk} s after the faults, before shrink_after_s (5 s)"
echo "shrunk: running on 2 of 4 nodes ${shrunk} s after the faults (shrink_after_s 5)"
wait_for "[[ \$(last_step_of_attempt $work/out 2) -ge 40 ]]" 30 "cat $work/out"

# 2. The nodes are repaired: their checks pass, safed resumes them, and the job grows back.
healed=$(date +%s)
for n in $bad; do safectl inject --node "$n" --gpu 0 --fault clear >/dev/null; done
bad=""
wait_for "[[ \$(job_field $jobid Restarts) == 2 && \$(job_field $jobid JobState) == RUNNING ]]" 90 \
    "scontrol show job $jobid; sinfo -N; tail -n 20 $SAFE_CLUSTER_DIR/log/safed.out"
grown=$(($(date +%s) - healed))
assert_eq "4" "$(job_field "$jobid" NumNodes | cut -d- -f1)" "the grown job's node count"
wait_for "grep -q 'size 4 of 4 attempt 3' $work/out" 15 "cat $work/out"
assert_contains "$(admin_comment "$jobid")" "retries=1/3" "the job's record (a grow back costs no retry)"
echo "grown back: running on 4 nodes ${grown} s after the repair"
wait_for "[[ \$(last_step_of_attempt $work/out 3) -ge 20 ]]" 30 "cat $work/out"

# 3. No work lost beyond the checkpoints: each attempt resumed from a checkpoint at most one
# interval (50 steps) behind the last step its predecessor printed.
for attempt in 2 3; do
    resumed=$(sed -n "s/^resumed from step \([0-9]*\) .* attempt $attempt\$/\1/p" "$work/out")
    [[ -n $resumed ]] || fail "attempt $attempt did not resume from a checkpoint:"$'\n'"$(cat "$work/out")"
    before=$(last_step_of_attempt "$work/out" $((attempt - 1)))
    ((before - resumed <= 50)) || fail "attempt $attempt resumed at step $resumed, $((before - resumed)) behind step $before"
    echo "attempt $attempt resumed at step $resumed; attempt $((attempt - 1)) had reached step $before"
done
metrics=$(safed_metrics)
assert_contains "$metrics" 'class="grow_back"' "metrics"
scancel "$jobid"
wait_for "[[ -z \$(squeue -h -j $jobid) ]]" 30 "squeue"

# 4. A job without the option, two of its nodes failing the same way: it waits for its 4.
plain=$(sbatch --parsable -N4 --exclusive --safe-retries=3 --safe-ckpt-dir="$work/ckpt2" \
    --safe-ckpt-signal=USR1@30 -o "$work/out2" "$work/job.sh" --steps 100000 --rate 20 --ckpt-every 50)
jobs_to_cancel="$plain $filler"
wait_for "[[ \$(job_field $plain JobState) == RUNNING ]]" 30 "scontrol show job $plain"
wait_for "[[ \$(last_step_of_attempt $work/out2 1) -ge 20 ]]" 30 "cat $work/out2"
bad=$(scontrol show hostnames "$(job_field "$plain" NodeList)" | tail -n2 | xargs)
for n in $bad; do safectl inject --node "$n" --gpu 0 --fault ecc >/dev/null; done
wait_for "[[ \$(job_field $plain Restarts) == 1 && \$(job_field $plain JobState) == PENDING ]]" 60 "scontrol show job $plain"
waited_since=$(date +%s)
# Three times shrink_after_s, checked each second: still pending for all 4 nodes.
while (($(date +%s) < waited_since + 15)); do
    assert_eq "PENDING" "$(job_field "$plain" JobState)" "the job without --safe-min-nodes"
    sleep 1
done
assert_eq "4" "$(job_field "$plain" NumNodes | cut -d- -f1)" "its node count"
echo "PASS: failover_elastic"
