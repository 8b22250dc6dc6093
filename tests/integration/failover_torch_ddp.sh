#!/usr/bin/env bash
# failover_torch_ddp.sh: a real PyTorch job (Debian's python3-torch, DistributedDataParallel over
# gloo on CPU, tests/trainer/torch_ddp_trainer.py through the safe_slurm helper) on a SaFE cluster
# of its own (6 nodes) survives a GPU fault and then a node death, and loses nothing:
#   1. a fault-free run of the 2-node job: its final model and optimizer state are the reference;
#   2. the same job, with an uncorrectable ECC error on one node (the checkpoint signal: the ranks
#      agree, save at the next step and exit; resumed from exactly that step) and then the death
#      of a node of its second attempt (no warning: resumed from the last periodic checkpoint, at
#      most --ckpt-every steps back). It completes with every tensor bitwise equal to the
#      reference's (tests/trainer/torch_compare.py: torch.equal); each fault's MTTR is printed;
#   3. once more through the REST bridge (Slurm target) with a GPU fault: bitwise equal again.
# The GPUs are simulated (safectl inject); the trainer runs on CPU, as everything here does.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

: "${SAFE_SOURCE_DIR:?SAFE_SOURCE_DIR (the source tree) is not set}"
# ./bootstrap.sh installs python3-torch on Debian 12; CI runs this test there only (.ci/run).
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "SKIP: failover_torch_ddp: Debian's python3-torch is not installed (apt-get install python3-torch)"
    exit 77
fi
trainer=$SAFE_SOURCE_DIR/tests/trainer/torch_ddp_trainer.py
compare=$SAFE_SOURCE_DIR/tests/trainer/torch_compare.py
STEPS=400 EVERY=20
train_args=(--steps "$STEPS" --rate 20 --ckpt-every "$EVERY")
# Six nodes: each restart gets two that the job has not just left (Slurm holds those back while
# the job's old credential lives: 120 s here), neither drained nor dead.
start_own_cluster sftd 6
# Every node of this cluster is on 127.0.0.1; on a site, MASTER_ADDR is the job's first node.
train_env=(PYTHONPATH="$SAFE_SOURCE_DIR/python" PYTHONDONTWRITEBYTECODE=1 MASTER_ADDR=127.0.0.1)
cat >"$work/job.sh" <<JOB
#!/bin/bash
trap '' USR1
export ${train_env[*]}
srun --ntasks-per-node=1 --kill-on-bad-exit=1 /usr/bin/python3 $trainer "\$@"
JOB
chmod +x "$work/job.sh"

# submit NAME [SBATCH_ARGS...]: the 2-node job, its output in $work/NAME.out, its final state in
# $work/NAME.pt, checkpoints in $work/NAME-ckpt; prints the job id.
submit() {
    sbatch --parsable -N2 --gpus-per-node=1 --safe-retries=3 --safe-ckpt-dir="$work/$1-ckpt" \
        --safe-ckpt-signal=USR1@30 -o "$work/$1.out" "${@:2}" "$work/job.sh" "${train_args[@]}" --final "$work/$1.pt"
}
# JOB SECONDS OUT: waits until the job has completed. The deadlines are generous: a CI run beside
# other clusters once starved the two ranks so that attempt 3 (300 steps, 15 s of work at 20
# steps/s) took over 2 minutes.
completed() { wait_for "[[ \$(job_field $1 JobState) == COMPLETED ]]" "$2" "scontrol show job $1; tail -n 20 $3"; }
# restarted JOB RESTARTS T0_MS: waits until the job runs again; prints the ms since T0_MS.
restarted() {
    wait_restarted "$1" "$2" $(($3 / 1000)) 90
    echo $(($(now_ms) - $3))
}
# fault_mttr OUT ATTEMPT T0_MS: once attempt ATTEMPT has trained its first step, the ms since T0_MS.
fault_mttr() {
    wait_for "[[ -n \$(first_step_of_attempt $1 $2) ]]" 60 "tail -n 20 $1"
    echo $(($(now_ms) - $3))
}
# ecc_fault JOB OUT: once attempt 1 of JOB (output OUT) has trained 40 steps, an uncorrectable ECC
# error on its last node; returns when attempt 2 has trained a step. Sets fault_node, running_ms
# (the fault to the job running again) and mttr_ms (to attempt 2's first step).
ecc_fault() {
    local t0
    wait_for "[[ \$(last_step_of_attempt $2 1) -ge 40 ]]" 60 "scontrol show job $1; tail $2"
    fault_node=$(scontrol show hostnames "$(job_field "$1" NodeList)" | tail -n1)
    t0=$(now_ms)
    safectl inject --node "$fault_node" --gpu 0 --fault ecc >/dev/null
    running_ms=$(restarted "$1" 1 "$t0")
    mttr_ms=$(fault_mttr "$2" 2 "$t0")
}
seconds() { printf '%d.%d s' $(($1 / 1000)) $(($1 % 1000 / 100)); }
# gpu_fault_checkpoint JOB OUT CKPT_DIR: after a GPU fault, attempt 2 must have resumed from attempt
# 1's newest checkpoint. That is normally the one written on the signal (no step recomputed). A
# periodic checkpoint that completes after safed's signal but before the trainer sees the signal
# (on a loaded machine slurmd delivers it later) is as new, and safed requeues on it ("new
# checkpoint complete", its log says): then the steps the signal took to arrive are recomputed.
# Sets ckpt_saved (the step), ckpt_recomputed and ckpt_how.
gpu_fault_checkpoint() {
    local attempt1
    attempt1=$(sed '/ attempt 2$/,$d' "$2")  # up to attempt 2's "resumed from ..." line
    ckpt_saved=$(sed -n 's/^checkpoint step \([0-9]*\)\( (on signal)\)\{0,1\}$/\1/p' <<<"$attempt1" | tail -n 1)
    [[ $ckpt_saved =~ ^[0-9]+$ ]] || fail "attempt 1 of job $1 wrote no checkpoint:"$'\n'"$(cat "$2")"
    assert_contains "$(cat "$2")" "resumed from step $ckpt_saved ($3/step-$ckpt_saved-attempt-1) attempt 2" "job $1's output"
    assert_eq $((ckpt_saved + 1)) "$(first_step_of_attempt "$2" 2)" "first step of job $1's attempt 2"
    ckpt_recomputed=$(($(last_step_of_attempt "$2" 1) - ckpt_saved))
    if grep -qx "checkpoint step $ckpt_saved (on signal)" <<<"$attempt1"; then
        ckpt_how="the checkpoint on the signal"
        assert_eq 0 "$ckpt_recomputed" "steps of job $1's attempt 1 after its checkpoint on the signal"
    else
        grep -q "safed: job $1: new checkpoint complete; requeueing" "$SAFE_CLUSTER_DIR/log/safed.out" ||
            fail "job $1 was requeued without its checkpoint on the signal, and not on a newer periodic one:"$'\n'"$(cat "$2")"$'\n'"$(grep "job $1" "$SAFE_CLUSTER_DIR/log/safed.out" | tail -n 20)"
        ckpt_how="a periodic checkpoint completed after the signal, before the trainer saw it"
        ((ckpt_recomputed <= EVERY / 4)) || fail "job $1 recomputes $ckpt_recomputed steps after its GPU fault (at most $((EVERY / 4)))"
    fi
}
equal_to_reference() {
    local diff
    diff=$(/usr/bin/python3 "$compare" "$work/reference.pt" "$work/$1.pt") || fail "$1's final state differs from the fault-free run's:"$'\n'"$diff"
    echo "$diff"
}

# 1. The fault-free reference.
ref=$(submit reference)
completed "$ref" 240 "$work/reference.out"
assert_contains "$(cat "$work/reference.out")" "done $STEPS steps attempt 1" "the reference run"

# 2. A GPU fault, then a node death.
job=$(submit faulted)
out=$work/faulted.out
ecc_fault "$job" "$out"
bad=$fault_node running_gpu=$running_ms mttr_gpu=$mttr_ms
gpu_fault_checkpoint "$job" "$out" "$work/faulted-ckpt"
saved_gpu=$ckpt_saved recomputed_gpu=$ckpt_recomputed how_gpu=$ckpt_how

resumed2=$(first_step_of_attempt "$out" 2)
wait_for "[[ \$(last_step_of_attempt $out 2) -ge $((resumed2 + EVERY + EVERY / 2)) ]]" 60 "tail $out"
# Not the batch host: its rank dies with it, the batch host's is stopped by the requeue.
dead=$(scontrol show hostnames "$(job_field "$job" NodeList)" | tail -n1)
[[ $dead != "$bad" ]] || fail "attempt 2 runs on the drained node $bad"
t1=$(now_ms)
"$SAFE_CLUSTER_BIN" kill-node --dir "$dir" --node "$dead" 2>/dev/null
running_death=$(restarted "$job" 2 "$t1")
mttr_death=$(fault_mttr "$out" 3 "$t1")
assert_contains "$(admin_comment "$job")" "last=node_fault $dead" "AdminComment"
lost2=$(last_step_of_attempt "$out" 2)
resumed3=$(sed -n 's/^resumed from step \([0-9]*\) .* attempt 3$/\1/p' "$out")
[[ $resumed3 =~ ^[0-9]+$ ]] || fail "attempt 3 did not resume from a checkpoint:"$'\n'"$(tail -n 30 "$out")"
assert_contains "$(cat "$out")" "resumed from step $resumed3 ($work/faulted-ckpt/step-$resumed3-attempt-2) attempt 3" "job output"
assert_eq $((resumed3 + 1)) "$(first_step_of_attempt "$out" 3)" "first step of attempt 3"
recomputed=$((lost2 - resumed3))
((recomputed >= 0 && recomputed <= EVERY)) ||
    fail "attempt 3 resumed from step $resumed3, attempt 2 had reached $lost2: $recomputed steps to recompute (at most $EVERY)"
completed "$job" 240 "$out"
assert_contains "$(cat "$out")" "done $STEPS steps attempt 3" "job output"
faulted_equal=$(equal_to_reference faulted)

# 3. Through the REST bridge (Slurm target), with a GPU fault.
[[ -n ${SAFE_BRIDGE_URL:-} ]] || fail "no SAFE_BRIDGE_URL: is the cluster up with --safe?"
safectl inject --node "$bad" --gpu 0 --fault clear >/dev/null
token=$(scontrol token username=root lifespan=600 | sed -n 's/^SLURM_JWT=//p')
spec=$(jq -n --arg py /usr/bin/python3 --arg trainer "$trainer" --arg final "$work/rest.pt" \
    --arg ckpt "$work/rest-ckpt" --arg pythonpath "$SAFE_SOURCE_DIR/python" --argjson steps $STEPS --argjson every $EVERY \
    '{name: "torch-ddp", nodes: 2, gpusPerNode: 1, retries: 3,
      checkpoint: {dir: $ckpt, signal: "USR1", graceSeconds: 30},
      env: {PYTHONPATH: $pythonpath, PYTHONDONTWRITEBYTECODE: "1", MASTER_ADDR: "127.0.0.1"},
      command: [$py, $trainer, "--steps", ($steps | tostring), "--rate", "20", "--ckpt-every", ($every | tostring), "--final", $final]}')
created=$(curl -sS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' --data-binary "$spec" "$SAFE_BRIDGE_URL/api/v1/workloads")
rest=$(jq -r .id <<<"$created")
[[ $rest =~ ^slurm-[0-9]+$ ]] || fail "the bridge did not create the workload: $created"
rest_job=${rest#slurm-}
rest_out=$(job_field "$rest_job" StdOut)
ecc_fault "$rest_job" "$rest_out"
rest_bad=$fault_node running_rest=$running_ms mttr_rest=$mttr_ms
completed "$rest_job" 240 "$rest_out"
gpu_fault_checkpoint "$rest_job" "$rest_out" "$work/rest-ckpt"
assert_contains "$(cat "$rest_out")" "done $STEPS steps attempt 2" "the REST workload's output"
phase=$(curl -sS -H "Authorization: Bearer $token" "$SAFE_BRIDGE_URL/api/v1/workloads/$rest" | jq -r .phase)
assert_eq Succeeded "$phase" "the REST workload's phase"
rest_equal=$(equal_to_reference rest)

printf 'PASS: failover_torch_ddp: %s steps of DDP over gloo, 2 ranks, a checkpoint every %s steps; MTTR: from the fault to the first step of the next attempt (the job running again after ...: the rest is Python, torch and the rendezvous starting)\n' $STEPS $EVERY
printf '  GPU fault on %s at step %s: MTTR %s (running again after %s), %d steps recomputed (from %s)\n' \
    "$bad" "$saved_gpu" "$(seconds "$mttr_gpu")" "$(seconds "$running_gpu")" "$recomputed_gpu" "$how_gpu"
printf '  node %s died at step %s: MTTR %s (running again after %s), %d steps recomputed (from the checkpoint of step %s)\n' \
    "$dead" "$lost2" "$(seconds "$mttr_death")" "$(seconds "$running_death")" "$recomputed" "$resumed3"
printf '  final state against the fault-free run: %s\n' "$faulted_equal"
printf '  through the REST bridge, GPU fault on %s: MTTR %s (running again after %s); final state: %s\n' \
    "$rest_bad" "$(seconds "$mttr_rest")" "$(seconds "$running_rest")" "$rest_equal"
