#!/usr/bin/env bash
# failover_expedited_requeue.sh DIR: Slurm 25.11's own fast restart (--requeue=expedite, allowed by
# SlurmctldParameters=enable_expedited_requeue) and SaFE's failover never both act on one failure.
# - A job SaFE retries (--safe-retries > 0) cannot also ask for it: job_submit refuses it with a
#   message that says which to drop, with the setting on (a cluster of its own) and off (DIR).
# - A job that leaves restarts to Slurm (--safe-retries=0 --requeue=expedite) is left to Slurm:
#   when its node dies Slurm restarts it on a healthy node (the dead node, which safed's probes set
#   DOWN, is not used), and safed neither requeues it again nor holds it. After its own error
#   (exit 1, no epilog failed) Slurm holds such a job itself; safed leaves that hold alone.
# Slurm before 25.11 has no expedited requeue: the test is skipped there (exit 77).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
needs_slurm 2511 "expedited requeue"
refusal="safe: --requeue=expedite and --safe-retries=1 would both restart this job"

# The setting off (the main cluster): SaFE's refusal for a job it retries, Slurm's for the rest.
expect_failure "$refusal" sbatch -N1 --requeue=expedite --safe-retries=1 --wrap true
out=$(sbatch -N1 --requeue=expedite --safe-retries=0 --wrap true 2>&1) && fail "Slurm took --requeue=expedite with the setting off: $out"
[[ $out != *"safe:"* ]] || fail "SaFE refused a job it does not retry: $out"

# The setting on.
own_cluster_dirs sfex
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 3 --safe --extra-conf SlurmctldParameters=enable_expedited_requeue >/dev/null
use_cluster "$dir"
expect_failure "$refusal" sbatch -N1 --requeue=expedite --safe-retries=1 --wrap true

jobid=$(sbatch --parsable -N1 --requeue=expedite --safe-retries=0 -o "$work/out" --wrap 'sleep 300')
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 30 "scontrol show job $jobid"
dead=$(job_field "$jobid" NodeList)
"$SAFE_CLUSTER_BIN" kill-node --dir "$dir" --node "$dead" >/dev/null
wait_for "[[ \$(job_field $jobid Restarts) -ge 1 && \$(job_field $jobid JobState) == RUNNING ]]" 60 \
    "scontrol show job $jobid; sinfo -N; tail -n 20 $dir/log/safed.out"
again=$(job_field "$jobid" NodeList)
[[ $again != "$dead" ]] || fail "Slurm restarted the job on its dead node $dead"
wait_passes 3  # a requeue or hold by safed would be made in one of these passes
assert_eq 1 "$(job_field "$jobid" Restarts)" "restarts of the expedited job"
assert_eq RUNNING "$(job_field "$jobid" JobState)" "state of the expedited job"
[[ $(safed_job "$jobid" '.failovers | length') == 0 ]] || fail "safed failed the job over: $(safectl job "$jobid")"
[[ $(admin_comment "$jobid") != *"retries exhausted"* ]] || fail "safed recorded the job as exhausted: $(admin_comment "$jobid")"
scancel "$jobid"
"$SAFE_CLUSTER_BIN" start-node --dir "$dir" --node "$dead" >/dev/null

# After the job's own error Slurm requeues an expedited job held ("no epilogs failed"): that stays
# Slurm's (safed neither releases nor requeues it).
buggy=$(sbatch --parsable -N1 --requeue=expedite --safe-retries=0 -o /dev/null --wrap 'exit 1')
wait_for "[[ \$(job_field $buggy JobState) == REQUEUE_HOLD ]]" 30 "scontrol show job $buggy; tail -n 20 $dir/log/safed.out"
wait_passes 3
assert_eq "REQUEUE_HOLD 1" "$(job_field "$buggy" JobState) $(job_field "$buggy" Restarts)" "Slurm's hold of the failed expedited job"
[[ $(safed_job "$buggy" '.failovers | length') == 0 ]] || fail "safed failed the held job over: $(safectl job "$buggy")"
scancel "$buggy"
echo "PASS: failover_expedited_requeue (Slurm $release: SaFE jobs refuse expedite; an expedited job moved from $dead to $again by Slurm alone)"
