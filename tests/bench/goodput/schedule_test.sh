#!/usr/bin/env bash
# schedule_test.sh: the goodput benchmark's fault schedule (schedule) is a function of its seed:
# the same seed gives the same schedule (the one the benchmark drew before the generator was its
# own program, kept below for seed 1), the kinds come in the mix's proportions, and every fault
# is in range.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=../../lib/cluster_test.sh
. "$here/../../lib/cluster_test.sh"
schedule() { "$here/schedule" "$@"; }
short=(--faults 6 --first-s 12 --last-s 60 --trainers 2 --gpus 8)
full=(--faults 12 --first-s 15 --last-s 135 --trainers 3 --gpus 8)

golden=$'0\t12628\tnode_death\t0\t0\t4
1\t26229\tgpu_lost\t0\t0\t2
2\t35600\tuser_crash\t1\t1\t5
3\t43009\tgpu_lost\t0\t1\t0
4\t46500\thang\t1\t1\t1
5\t58068\tgpu_ecc\t0\t1\t2'
assert_eq "$golden" "$(schedule --seed 1 "${short[@]}")" "the --short schedule of seed 1"
for seed in 1 2 99; do
    assert_eq "$(schedule --seed "$seed" "${full[@]}")" "$(schedule --seed "$seed" "${full[@]}")" "seed $seed twice"
done
[[ $(schedule --seed 1 "${full[@]}") != "$(schedule --seed 2 "${full[@]}")" ]] || fail "seeds 1 and 2 drew the same schedule"

# The mix: 12 faults split 165:91:56:49:46 by largest remainder are 5, 3, 2, 1, 1; 6 are 2, 1, 1, 1, 1.
counts() { cut -f3 | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }'; }
assert_eq "gpu_ecc=3 gpu_lost=5 hang=1 node_death=1 user_crash=2 " "$(schedule --seed 5 "${full[@]}" | counts)" "12 faults"
assert_eq "gpu_ecc=1 gpu_lost=2 hang=1 node_death=1 user_crash=1 " "$(schedule --seed 5 "${short[@]}" | counts)" "6 faults"

# In range: times rising within [15 s, 135 s), jobs, nodes and GPUs within the run's.
for seed in $(seq 1 20); do
    schedule --seed "$seed" "${full[@]}" | awk -F'\t' -v s="$seed" '
        $2 <= last || $2 < 15000 || $2 >= 135000 || $4 >= 3 || $5 > 1 || $6 >= 8 { print "seed " s ": " $0; bad = 1 }
        { last = $2 } END { exit bad }' || fail "a fault out of range"
done

expect_usage() { if "$here/schedule" "$@" >/dev/null 2>&1; then fail "accepted: $*"; fi; }
expect_usage --seed x "${short[@]}"
expect_usage --seed 1 --faults 0 --first-s 12 --last-s 60 --trainers 2 --gpus 8
expect_usage --seed 1 --faults 6 --first-s 60 --last-s 12 --trainers 2 --gpus 8
expect_usage --seed 1
echo "PASS: schedule_test"
