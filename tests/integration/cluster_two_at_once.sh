#!/usr/bin/env bash
# cluster_two_at_once.sh DIR: while the cluster at DIR is up, a second 2-node cluster comes up
# in its own directory with its own ports; a job runs on each at the same time; `down` of the
# second leaves no process of it behind and leaves the first one (and munged) working.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"

(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
dir_a=$(realpath -m -- "$1")
[[ -f $dir_a/env ]] || fail "no cluster at $dir_a"
nodes_a=$( (use_cluster "$dir_a" && sinfo -h -N -o '%N') | sort -u | wc -l)

# Short path: Slurm's step sockets under DIR/spool must fit in 107 bytes.
work=$(mktemp -d /tmp/safe-two.XXXXXX)
dir_b=$work/cluster
cleanup() {
    "$SAFE_CLUSTER_BIN" down --dir "$dir_b" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

"$SAFE_CLUSTER_BIN" up --dir "$dir_b" --nodes 2 --gpus-per-node 2 ||
    fail "second cluster did not come up"

conf_a=$(sed -n 's/^SlurmctldPort=//p' "$dir_a/slurm.conf")
conf_b=$(sed -n 's/^SlurmctldPort=//p' "$dir_b/slurm.conf")
[[ $conf_a != "$conf_b" ]] || fail "both clusters use SlurmctldPort $conf_a"
name_a=$(sed -n 's/^ClusterName=//p' "$dir_a/slurm.conf")
name_b=$(sed -n 's/^ClusterName=//p' "$dir_b/slurm.conf")
[[ $name_a != "$name_b" ]] || fail "both clusters are named $name_a"

# Each batch script marks that it runs and waits for the other cluster's job to run too: the
# jobs pass only if both clusters run them at the same time.
cat >"$work/job.sh" <<'JOB'
#!/bin/bash
touch "$WORK/running.$ME"
for ((i = 0; i < 300; i++)); do
    [[ -e $WORK/running.$OTHER ]] && break
    sleep 0.1
done
[[ -e $WORK/running.$OTHER ]] || { echo "the other cluster's job never ran alongside" >&2; exit 1; }
srun bash -c 'echo "cluster=$SLURM_CLUSTER_NAME node=$SLURMD_NODENAME"'
JOB

# submit DIR ME OTHER: one 2-node job on the cluster at DIR, submitted from a shell that sourced
# its env (so the job carries that cluster's tag); waits for it to end.
submit() {
    (
        use_cluster "$1"
        cd "$work"
        WORK=$work ME=$2 OTHER=$3 timeout 120 sbatch --wait -N2 -o "$work/out.$2" "$work/job.sh" \
            >"$work/sbatch.$2" 2>&1
    )
}
t0=$(date +%s%3N)
submit "$dir_a" a b &
pid_a=$!
submit "$dir_b" b a &
pid_b=$!
rc_a=0 rc_b=0
wait "$pid_a" || rc_a=$?
wait "$pid_b" || rc_b=$?
dt=$(($(date +%s%3N) - t0))
((rc_a == 0)) || fail "job on first cluster failed (rc $rc_a): $(cat "$work/sbatch.a" "$work/out.a" 2>/dev/null)"
((rc_b == 0)) || fail "job on second cluster failed (rc $rc_b): $(cat "$work/sbatch.b" "$work/out.b" 2>/dev/null)"

assert_eq 2 "$(grep -c "^cluster=$name_a node=n" "$work/out.a")" "tasks of job on $name_a"
assert_eq 2 "$(grep -c "^cluster=$name_b node=n" "$work/out.b")" "tasks of job on $name_b"

"$SAFE_CLUSTER_BIN" down --dir "$dir_b" || fail "down of second cluster failed"
left=$(survivors_of "$dir_b")
[[ -z $left ]] || fail "processes of the second cluster remain after down:"$'\n'"$left"
left=$(pgrep -af -- "-f $dir_b/slurm.conf" || true)
[[ -z $left ]] || fail "daemons of the second cluster remain after down:"$'\n'"$left"

# The first cluster is untouched: same nodes, all still answering, and it still runs jobs.
use_cluster "$dir_a"
assert_eq "$nodes_a" "$(sinfo -h -N -o '%N' | sort -u | wc -l)" "nodes of first cluster after down of second"
out=$(cd "$work" && timeout 60 srun -N1 hostname 2>&1) || fail "first cluster cannot run a job after down of second: $out"
echo "PASS: cluster_two_at_once (jobs on $name_a and $name_b together in ${dt} ms)"
