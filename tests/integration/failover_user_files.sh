#!/usr/bin/env bash
# failover_user_files.sh DIR: what safed reads of a job belongs to the job's user, who can make it
# anything. On the --safe cluster at DIR, as an ordinary user made by the test:
#   - a job whose output file is replaced by a FIFO (an open would wait for a writer for ever)
#     after a failover: safed classifies it and keeps answering; nothing stalls;
#   - what the job prints (srun's "Unable to create step" line) is shown, never believed: the
#     failure stays the user's and is not retried;
#   - -o patterns safed must expand as slurmstepd does (%u, %N, ...) and an output safed cannot
#     watch (/dev/null): neither makes a running job "hung";
#   - a checkpoint another user planted in a shared checkpoint directory is never resumed from.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
work=$(mktemp -d /tmp/safe-ufiles.XXXXXX)
chmod 1777 "$work"
trap 'scancel --name=safe-ufiles >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
ensure_user safe-member
as() { run_as safe-member "$@"; }
metrics_answer() { curl -sf --max-time 3 "$SAFE_CONTROLLER_URL/metrics" >/dev/null; }
all_nodes_in_service 60

# 1. The first run exits 75 (infrastructure: failed over); the second replaces its output file
# with a FIFO, prints srun's step error, and fails.
cat >"$work/fifo.sh" <<'JOB'
#!/bin/bash
if [[ ${SLURM_RESTART_COUNT:-0} == 0 ]]; then exit 75; fi
echo "srun: error: Unable to create step for job $SLURM_JOB_ID: Invalid generic resource (gres) specification"
rm -f "$OUT" && mkfifo "$OUT"
exit 1
JOB
chmod 0755 "$work/fifo.sh"
fifo=$(as sbatch --parsable --job-name=safe-ufiles --safe-retries=2 -o "$work/fifo.out" \
    --export=ALL,OUT="$work/fifo.out" "$work/fifo.sh")
wait_for "[[ \$(job_fields $fifo JobState Restarts | tr '\n' ' ') == 'FAILED 1 ' ]]" 60 "scontrol show job $fifo"
[[ -p $work/fifo.out ]] || fail "the job did not leave a FIFO in place of its output"
wait_for "safectl job $fifo | grep -q 'user_error'" 15 "safectl job $fifo; tail $SAFE_CLUSTER_DIR/log/safed.out"
metrics_answer || fail "safed stopped answering after reading a job's files (a FIFO in place of the output)"
sleep 3  # a wrong retry of the user's failure would show by now
assert_eq "FAILED 1" "$(job_fields "$fifo" JobState Restarts | tr '\n' ' ' | sed 's/ $//')" "the user's failure is not retried"

# 2. An output named with patterns Slurm expands: progress is seen, the job is not "hung".
pattern=$(as sbatch --parsable --job-name=safe-ufiles --safe-retries=1 --safe-hang-timeout=6 \
    -o "$work/o-%u-%x-%N.%3j" --wrap 'for i in $(seq 16); do echo "step $i"; sleep 0.5; done')
wait_for "[[ \$(job_field $pattern JobState) == COMPLETED ]]" 40 "scontrol show job $pattern"
assert_eq 0 "$(job_field "$pattern" Restarts)" "restarts of a job writing to o-%u-%x-%N.%3j"
ls "$work"/o-safe-member-safe-ufiles-*."$(printf %03d "$pattern")" >/dev/null || fail "no output file with the expanded name"
# 3. Output to /dev/null: no signal safed can read, never a hang.
null=$(as sbatch --parsable --job-name=safe-ufiles --safe-retries=1 --safe-hang-timeout=4 -o /dev/null --wrap 'sleep 12')
wait_for "[[ \$(job_field $null JobState) == COMPLETED ]]" 40 "scontrol show job $null"
assert_eq 0 "$(job_field "$null" Restarts)" "restarts of a job writing to /dev/null"

# 4. A checkpoint directory another user (here root) made, with a complete checkpoint in it: the
# job resumes from nothing and says why.
mkdir -p "$work/shared-ckpt/step-999"
chmod 1777 "$work/shared-ckpt"
touch "$work/shared-ckpt/step-999/COMPLETE"
resume=$(as sbatch --parsable --job-name=safe-ufiles --safe-ckpt-dir="$work/shared-ckpt" -o "$work/resume.out" \
    -e "$work/resume.err" --wrap 'echo "resume=[$SAFE_RESUME_FROM]"')
wait_for "[[ \$(job_field $resume JobState) == COMPLETED ]]" 30
assert_contains "$(cat "$work/resume.out")" "resume=[]" "SAFE_RESUME_FROM with a planted checkpoint"
assert_contains "$(cat "$work/resume.err")" "safe: not resuming: $work/shared-ckpt belongs to uid 0"
metrics_answer || fail "safed stopped answering"
echo "PASS: failover_user_files (FIFO output, printed errors, patterns, /dev/null, planted checkpoints)"
