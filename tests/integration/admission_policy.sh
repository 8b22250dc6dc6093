#!/usr/bin/env bash
# admission_policy.sh DIR: workspace policy applied by job_submit_safe.so inside slurmctld on the
# --safe cluster at DIR: rejections reach the user with their message, defaults and metadata are
# recorded on the job, retrying jobs requeue with their output appended, and the job's own user
# owns its checkpoint directory.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
work=$(mktemp -d /tmp/safe-pol.XXXXXX)
chmod 1777 "$work"
trap 'scancel --name=safe-pol-test >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cd "$work"

expect_failure "sbatch: error: safe: unknown workspace 'nope'; you may use: ml, research" \
    sbatch --safe-workspace=nope --wrap true
expect_failure "safe: the job can get 16 GPUs (2 nodes x 8 GPUs) but workspace 'ml' has a quota of 8; ask for at most 8 GPUs" \
    sbatch --safe-workspace=ml -N2 --gpus-per-node=8 --wrap true
expect_failure "safe: the job can get 9 GPUs (--gpus) but workspace 'ml' has a quota of 8" \
    srun --safe-workspace=ml --gpus=9 true
expect_failure "safe: workspace 'research' runs in partition 'research', not 'gpu'; drop -p/--partition or use -p research" \
    sbatch --safe-workspace=research -p gpu --wrap true
expect_failure "safe: licenses named safe_ws_* carry workspace GPU quotas" \
    sbatch -L safe_ws_ml:1 --wrap true

# A non-member: a user created for this test.
ensure_user safetest
as_user() { run_as safetest "$@"; }
expect_failure "safe: user 'safetest' is not a member of workspace 'ml'; you are not a member of any workspace" \
    as_user sbatch --safe-workspace=ml --wrap true

# The checkpoint directory belongs to the job's user, never to root.
jobid=$(as_user sbatch --parsable --wait -o "$work/owner.out" "--safe-ckpt-dir=$work/u/ckpt/run1" \
    --wrap 'id -un; echo "$SAFE_CKPT_DIR"')
assert_eq "safetest" "$(head -1 "$work/owner.out")" "job user"
assert_eq "safetest" "$(stat -c '%U' "$work/u")" "owner of the created parent"
assert_eq "safetest" "$(stat -c '%U' "$work/u/ckpt/run1")" "owner of the checkpoint directory"

# scontrol update: users may not change what the quota was computed from; administrators may.
held=$(as_user sbatch --parsable --hold --job-name=safe-pol-test -o /dev/null --gpus=1 --wrap true)
expect_failure "Access/permission denied" as_user scontrol update jobid="$held" Licenses=foo:1
expect_failure "Access/permission denied" as_user scontrol update jobid="$held" NumNodes=2
# Since 23.02 job_modify can answer with a message, and the user sees why (22.05: only the log).
release=$(scontrol -V | awk '{ split($2, v, "."); print v[1] * 100 + v[2] }')
if ((release >= 2302)); then
    expect_failure "safe: a job's licenses cannot be changed" as_user scontrol update jobid="$held" Licenses=foo:1
fi
wait_for "grep -q 'refused an update by safetest: safe: a job.s licenses cannot be changed' '$SAFE_CLUSTER_DIR/log/slurmctld.log'" 10 \
    "grep job_submit/safe '$SAFE_CLUSTER_DIR/log/slurmctld.log' | tail -5"
as_user scontrol update jobid="$held" TimeLimit=10 || fail "an unrelated update was refused"
scontrol update jobid="$held" NumNodes=2 || fail "root's update was refused"
scancel "$held"

# Metadata, defaults and licenses on an accepted job.
jobid=$(sbatch --parsable --hold --job-name=safe-pol-test --safe-workspace=ml --safe-retries=9 --gpus-per-node=2 -N2 \
    --safe-ckpt-dir=/tmp/safe-pol-ck --wrap true 2>"$work/notice")
assert_contains "$(cat "$work/notice")" "sbatch: safe: --safe-retries=9 capped to 5 (workspace 'ml' maximum)"
show=$(scontrol show job "$jobid")
# sub= is the job's first submission time (the state store's key; Slurm resets SubmitTime on requeue).
assert_contains "$(sed 's/ sub=[0-9]* / sub=T /' <<<"$show")" "AdminComment=safe: ws=ml retries=0/5 health=standard sig=USR1@120 hang=0 gpus=4 sub=T ckpt=/tmp/safe-pol-ck"
assert_contains "$show" "Licenses=safe_ws_ml:4"
assert_contains "$show" "Requeue=1"
scancel "$jobid"

# A retrying job: requeued, its output appended, SAFE_ATTEMPT counting up.
cat >"$work/attempts.sh" <<'JOB'
#!/bin/bash
echo "attempt $SAFE_ATTEMPT of $((SAFE_MAX_RETRIES + 1))"
[[ $SAFE_ATTEMPT -ge 2 ]] || sleep 300
JOB
jobid=$(sbatch --parsable --job-name=safe-pol-test --safe-retries=2 -o "$work/attempts.out" "$work/attempts.sh")
wait_for "grep -q 'attempt 1' '$work/attempts.out'" 60
first_node=$(squeue -h -j "$jobid" -o %N)
scontrol requeue "$jobid"
# Slurm holds a requeued job back (for its credential's lifetime, by default); SaFE's controller
# restarts it at once elsewhere the same way.
wait_for "squeue -h -j $jobid -o %T | grep -qx PENDING" 30
scontrol update jobid="$jobid" ExcNodeList="$first_node" StartTime=now
wait_for "[[ \$(scontrol show job $jobid | grep -o 'JobState=[A-Z]*') == JobState=COMPLETED ]]" 90
assert_eq $'attempt 1 of 3\nattempt 2 of 3' "$(grep '^attempt' "$work/attempts.out")" "output of both attempts"
echo "PASS: admission_policy"
