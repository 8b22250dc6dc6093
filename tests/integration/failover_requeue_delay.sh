#!/usr/bin/env bash
# failover_requeue_delay.sh DIR: Slurm 25.11's SchedulerParameters=requeue_delay against SaFE's
# StartTime=now. Without it Slurm keeps a requeued job pending for the job credential lifetime and
# safed's restart update (ExcNodeList, StartTime=now, the record) starts it; with requeue_delay=0
# Slurm may start the job again by itself, one second after safed's requeue, before that update.
# Either way the job must run again off the faulty node, and safed must record the restart (retry
# counted, AdminComment written, one failover) instead of fighting a job that already runs.
# Slurm before 25.11 has no requeue_delay: the test is skipped there (exit 77).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
needs_slurm 2511 "SchedulerParameters=requeue_delay"

own_cluster_dirs sfrd
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 3 --safe --extra-conf SchedulerParameters=requeue_delay=0 >/dev/null
use_cluster "$dir"
all_nodes_in_service 60
write_trainer_script "$work/job.sh"

jobid=$(sbatch --parsable -N1 --gpus-per-node=1 --safe-retries=2 --safe-ckpt-dir="$work/ckpt" --safe-ckpt-signal=USR1@30 \
    -o "$work/out" "$work/job.sh" --steps 100000 --rate 20 --ckpt-every 50)
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 30 "scontrol show job $jobid"
bad=$(job_field "$jobid" NodeList)
t0=$(now_ms)
safectl inject --node "$bad" --gpu 0 --fault ecc >/dev/null
wait_restarted "$jobid" 1 $((t0 / 1000)) 30
mttr_ms=$(($(now_ms) - t0))
again=$(job_field "$jobid" NodeList)
[[ $again != "$bad" ]] || fail "the job runs again on its faulty node $bad"
# The restart is recorded whoever started the job: safed's update or Slurm after requeue_delay.
wait_for "[[ \$(safed_job $jobid '.failovers[0].phase') == done ]]" 30 "safectl job $jobid; tail -n 20 $dir/log/safed.out"
assert_contains "$(admin_comment "$jobid")" "retries=1/2" "AdminComment"
assert_eq 1 "$(safed_job "$jobid" '.failovers | length')" "failovers of the job"
wait_passes 3
# safed's update (Slurm refuses new nodes or a begin time for a running job) is never refused.
assert_eq 0 "$(grep -c "job $jobid: restart FAILED" "$dir/log/safed.out" || true)" "refused restart updates"
assert_eq 1 "$(job_field "$jobid" Restarts)" "restarts"
assert_eq RUNNING "$(job_field "$jobid" JobState)" "job state"
if grep -q "job $jobid: restart: Slurm already started it again" "$dir/log/safed.out"; then
    who="Slurm started it first, safed recorded it"
else
    who="safed's update started it"
fi
scancel "$jobid"
safectl inject --node "$bad" --gpu 0 --fault clear >/dev/null
printf 'PASS: failover_requeue_delay (Slurm %s, requeue_delay=0: job %s moved from %s to %s in %d.%03d s; %s)\n' \
    "$release" "$jobid" "$bad" "$again" $((mttr_ms / 1000)) $((mttr_ms % 1000)) "$who"
