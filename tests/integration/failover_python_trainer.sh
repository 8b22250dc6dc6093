#!/usr/bin/env bash
# failover_python_trainer.sh DIR: the Python helper (python/safe_slurm) in a real SaFE job. A
# 2-node job of tests/trainer/python_trainer.py (Debian's /usr/bin/python3, stdlib only) runs; one
# of its nodes gets an uncorrectable ECC error and is drained. The trainer gets the checkpoint
# signal through the helper's handler, saves at the next step with save() (labelled marker last),
# and exits as docs/user-guide.md says to; safed requeues the job away from the node, and the next
# attempt resumes, through resume(), from exactly that checkpoint and completes. Rank 1 never
# writes a checkpoint.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

: "${SAFE_SOURCE_DIR:?SAFE_SOURCE_DIR (the source tree) is not set}"
trainer_test_on_fixture "$@"
# The Python trainer in place of safe-trainer.
cat >"$work/job.sh" <<JOB
#!/bin/bash
trap '' USR1
export PYTHONPATH=$SAFE_SOURCE_DIR/python PYTHONDONTWRITEBYTECODE=1
srun --ntasks-per-node=1 /usr/bin/python3 $SAFE_SOURCE_DIR/tests/trainer/python_trainer.py "\$@"
JOB
chmod +x "$work/job.sh"
all_nodes_in_service 60

# 20 steps/s for 30 s, a checkpoint every 50 steps: the one on the signal is its own, long before
# the end (on 25.11.7 in CI, 200 steps ran out before the drain reached safed).
jobid=$(sbatch --parsable -N2 --gpus-per-node=1 --safe-retries=2 --safe-ckpt-dir="$work/ckpt" \
    --safe-ckpt-signal=USR1@30 -o "$work/out" "$work/job.sh" --steps 600 --rate 20 --ckpt-every 50)
wait_for "[[ \$(last_step_of_attempt $work/out 1) -ge 60 ]]" 30 "scontrol show job $jobid; cat $work/out"
# heartbeat() renames a new file over the old: it always holds a step, never nothing.
[[ $(cat "$work/ckpt/.safe-heartbeat" 2>&1) =~ ^[0-9]+$ ]] ||
    fail "heartbeat() left no step in $work/ckpt/.safe-heartbeat: $(cat "$work/ckpt/.safe-heartbeat" 2>&1)"
bad=$(scontrol show hostnames "$(job_field "$jobid" NodeList)" | tail -n1)
t0=$(date +%s)
safectl inject --node "$bad" --gpu 0 --fault ecc >/dev/null
wait_restarted "$jobid" 1 "$t0" 40
wait_for "[[ \$(job_field $jobid JobState) == COMPLETED ]]" 60 "scontrol show job $jobid; cat $work/out"

out=$(cat "$work/out")
on_signal=$(sed -n 's/^checkpoint step \([0-9]*\) (on signal)$/\1/p' "$work/out")
[[ $on_signal =~ ^[0-9]+$ ]] || fail "no single checkpoint on the signal in attempt 1:"$'\n'"$out"
assert_contains "$out" "exiting at step $on_signal attempt 1 for SaFE to requeue" "job output"
# The helper's checkpoint, as SaFE reads it: the directory of the step and attempt, the marker
# labelled with the job and attempt, the trainer's file in it.
ckpt=$work/ckpt/step-$on_signal-attempt-1
assert_eq "job=$jobid attempt=1" "$(cat "$ckpt/COMPLETE")" "the marker's label"
assert_eq "$on_signal" "$(cat "$ckpt/state")" "the checkpoint's state"
[[ -z $(find "$work/ckpt" -name '.*.partial') ]] || fail "a partial marker was left: $(find "$work/ckpt" -name '.*.partial')"
assert_eq "checkpoint=step-$on_signal-attempt-1" "$(cat "$work/ckpt/.safe-fence/job-$jobid.attempt-1")" "the fence"
assert_contains "$out" "resumed from step $on_signal ($ckpt) attempt 2" "job output (resume())"
assert_eq $((on_signal + 1)) "$(first_step_of_attempt "$work/out" 2)" "first step of attempt 2"
assert_contains "$out" "done 600 steps attempt 2" "job output"
[[ $(scontrol show hostnames "$(job_field "$jobid" NodeList)") != *"$bad"* ]] || fail "attempt 2 ran on the drained node $bad"
echo "PASS: failover_python_trainer (checkpoint on the signal at step $on_signal, resumed from it on attempt 2)"
