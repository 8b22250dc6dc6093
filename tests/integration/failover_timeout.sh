#!/usr/bin/env bash
# failover_timeout.sh: on a cluster of its own (one node, SaFE), a job that hits its time limit
# (TIMEOUT) with retries available stays ended: safed classifies it `timeout` and does not
# requeue it. Its own cluster because Slurm's time limits are whole minutes: on the shared
# cluster this minute would hold the lock the fault tests take turns with.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

start_own_cluster sfto 1

job=$(sbatch --parsable -N1 --safe-retries=2 --time=1 -o /dev/null --wrap 'sleep 300')
# Slurm checks time limits about every 30 s: the job ends 60 to 90 s after it started.
wait_for "[[ \$(job_field $job JobState) == TIMEOUT ]]" 150 "scontrol show job $job"
wait_for "[[ \$(safed_job $job .last_class) == timeout ]]" 10 "safectl job $job"
wait_passes 5  # a wrong requeue would have been made in one of these passes
assert_eq "TIMEOUT 0" "$(job_field "$job" JobState) $(job_field "$job" Restarts)" "state and restarts of the job"
assert_eq timeout "$(safed_job "$job" .state)" "safed's state of the job"
echo "PASS: failover_timeout (a TIMEOUT job with retries left is not requeued)"
