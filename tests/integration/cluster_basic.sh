#!/usr/bin/env bash
# cluster_basic.sh DIR: on the 4-node cluster up at DIR, a 2-node job with 2 GPUs per node runs
# one task per node, and each task sees GPU indices 0,1 bound through Slurm's gres (fake GPU
# character devices), as on real hardware.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"

(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"

nodes=$(sinfo -h -N -o '%N' | sort -u)
assert_eq 4 "$(wc -l <<<"$nodes")" "number of nodes in sinfo"
assert_eq "n1 n2 n3 n4" "$(paste -sd' ' <<<"$nodes")" "node names"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/job.sh" <<'JOB'
#!/bin/bash
srun bash -c 'echo "task $SLURM_PROCID node=$SLURMD_NODENAME gpus=${CUDA_VISIBLE_DEVICES:-none}"'
JOB

# --wait: sbatch returns the job's exit code once it ends.
if ! jobid=$(cd "$work" && timeout 120 sbatch --parsable --wait -N2 --gpus-per-node=2 \
    -o "$work/out" "$work/job.sh" 2>"$work/err"); then
    fail "sbatch --wait failed: $(cat "$work/err")"$'\n'"job output: $(cat "$work/out" 2>/dev/null)"
fi
jobid=${jobid%%;*}
state=$(scontrol show job "$jobid" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
assert_eq COMPLETED "$state" "state of job $jobid"

output=$(cat "$work/out")
assert_eq 2 "$(grep -c '^task ' <<<"$output")" "task lines in job output"
node_names=$(sed -n 's/^task [0-9]* node=\([^ ]*\) .*/\1/p' <<<"$output" | sort -u)
assert_eq 2 "$(wc -l <<<"$node_names")" "distinct nodes in job output"
for n in $node_names; do
    [[ $nodes == *"$n"* ]] || fail "task ran on unknown node '$n'"
done
# Two GPUs of the node's eight for each task: 0,1 on an idle node; the tests share the cluster,
# and another's job may hold GPU 0 there.
gpus=$(sed -n 's/^task .* gpus=\(.*\)$/\1/p' <<<"$output" | sort -u)
while read -r g; do
    [[ $g =~ ^([0-7]),([0-7])$ && ${BASH_REMATCH[1]} != "${BASH_REMATCH[2]}" ]] ||
        fail "CUDA_VISIBLE_DEVICES of a task: expected two of the node's GPUs 0-7, got '$g'"
done <<<"$gpus"
echo "PASS: cluster_basic (job $jobid on $(paste -sd' ' <<<"$node_names"), gpus $gpus)"
