#!/usr/bin/env bash
# admission_quota.sh DIR: workspace ml has a GPU quota of 8 on the --safe cluster at DIR. Two
# 8-GPU jobs: the second pends with Reason=Licenses while the first runs, and runs after it ends.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
work=$(mktemp -d /tmp/safe-quota.XXXXXX)
trap 'scancel --name=safe-quota-test >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

assert_contains "$(scontrol show licenses safe_ws_ml)" "Total=8"
hold='while [ ! -e '"$work"'/release ]; do sleep 0.2; done'
first=$(sbatch --parsable --job-name=safe-quota-test --safe-workspace=ml --gpus-per-node=8 -o /dev/null --wrap "$hold")
wait_for "squeue -h -j $first -o %T | grep -qx RUNNING" 30
second=$(sbatch --parsable --job-name=safe-quota-test --safe-workspace=ml --gpus=8 -o /dev/null --wrap true)
# Free nodes are there (4 nodes x 8 GPUs): only the workspace quota holds the second job back.
wait_for "squeue -h -j $second -o %r | grep -qx Licenses" 30
# A scheduling cycle with free nodes (slurmctld schedules on each submission): a job without GPUs
# starts in it, and the second one, ahead of it in the queue, is still held back.
probe=$(sbatch --parsable --job-name=safe-quota-test -o /dev/null --wrap true)
wait_for "[[ \$(squeue -h -j $probe -o %T) != PENDING ]]" 30
assert_eq "PENDING Licenses" "$(squeue -h -j "$second" -o '%T %r')" "second job while the first runs"
assert_contains "$(scontrol show licenses safe_ws_ml)" "Used=8"

touch "$work/release"
wait_for "[[ \$(scontrol show job $second | grep -o 'JobState=[A-Z]*') == JobState=COMPLETED ]]" 60
echo "PASS: admission_quota (job $second waited for job $first's licenses)"
