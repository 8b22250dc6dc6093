#!/usr/bin/env bash
# admission_quota_forms.sh DIR: on the --safe cluster at DIR (nodes of 8 GPUs; workspace ml: quota
# 8, partition-less; workspace research: quota 16, partition research), the GPU count a job is
# charged is never less than what Slurm can give it, and a workspace's partition is that
# workspace's however a job reaches it. As ordinary users made by the test: safe-member (a member
# of ml) and safe-outsider (a member of nothing).
#   --exclusive without a GPU request: Slurm gives it every GPU of the node; charged 8.
#   --exclusive=user without one: Slurm gives it no GPU; charged none.
#   -N1-2 --gpus-per-node=8: Slurm may give it 16; charged 16, so refused over ml's quota of 8.
#   -n 2 without -N: charged for 2 nodes; no -N and no -n: bounded to the one node charged.
#   -p research without --safe-workspace: research's policy applies (membership, quota license).
#   -L ';safe_ws_ml:8' (Slurm also splits at ';'): refused, never a bypass of ml's quota.
#   a heterogeneous job: only one component may take GPUs from a quota (Slurm tests each alone);
#     its leader holds the charge.
#   a job array: every task is charged (licenses are held per running task).
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
work=$(mktemp -d /tmp/safe-qforms.XXXXXX)
chmod 0755 "$work"
trap 'scancel --name=safe-qforms >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
for u in safe-member safe-outsider; do
    ensure_user "$u"
done
licenses_of() { job_field "$1" Licenses; }
hold='sleep 300'

# --exclusive alone: Slurm allocates all 8 GPUs of the node; the license says 8.
excl=$(run_as safe-member sbatch --parsable --job-name=safe-qforms --safe-workspace=ml --exclusive -o /dev/null --wrap "$hold")
assert_eq "safe_ws_ml:8" "$(licenses_of "$excl")" "license of an --exclusive job without a GPU request"
wait_for "[[ \$(job_field $excl JobState) == RUNNING ]]" 30
assert_contains "$(scontrol show job -d "$excl")" "GRES=gpu:8(IDX:0-7)" "what Slurm gave it"
# ml's quota is spent: a second one waits for the license, though nodes are free.
excl2=$(run_as safe-member sbatch --parsable --job-name=safe-qforms --safe-workspace=ml --exclusive -o /dev/null --wrap true)
wait_for "[[ \$(job_field $excl2 Reason) == Licenses ]]" 30
scancel "$excl" "$excl2"
# --exclusive=user only keeps other users off the node: Slurm gives it no GPU it did not ask for,
# so it is charged none (what docs/user-guide.md says; this checks it on the Slurm built against).
xuser=$(run_as safe-member sbatch --parsable --job-name=safe-qforms --safe-workspace=ml --exclusive=user -o /dev/null \
    --wrap "$hold")
wait_for "[[ \$(job_field $xuser JobState) == RUNNING ]]" 30
[[ $(scontrol show job -d "$xuser") != *"GRES=gpu"* ]] ||
    fail "Slurm gave an --exclusive=user job GPUs it did not ask for: $(scontrol show job -d "$xuser" | grep GRES)"
[[ $(licenses_of "$xuser") != *safe_ws_* ]] || fail "an --exclusive=user job without GPUs was charged: $(licenses_of "$xuser")"
scancel "$xuser"

# A node range is charged at its maximum.
expect_failure "safe: the job can get 16 GPUs (2 nodes x 8 GPUs) but workspace 'ml' has a quota of 8" \
    run_as safe-member sbatch --safe-workspace=ml -N1-2 --gpus-per-node=8 --wrap true
# Without -N, tasks may be spread one per node: -n 2 is charged for 2 nodes...
spread=$(run_as safe-member sbatch --parsable --hold --job-name=safe-qforms --safe-workspace=ml -n 2 --gpus-per-node=4 \
    -o /dev/null --wrap true)
assert_eq "safe_ws_ml:8" "$(licenses_of "$spread")" "license of -n 2 --gpus-per-node=4"
# ...and a job with neither -N nor -n is bounded to the one node it is charged for.
one=$(run_as safe-member sbatch --parsable --hold --job-name=safe-qforms --safe-workspace=ml --gpus-per-node=4 \
    -o /dev/null --wrap true)
assert_eq "safe_ws_ml:4" "$(licenses_of "$one")" "license of --gpus-per-node=4"
assert_eq "1-1" "$(job_field "$one" NumNodes)" "node count of --gpus-per-node=4 after admission"
scancel "$spread" "$one"
# --gres=gpu without a count is one per node.
gres=$(run_as safe-member sbatch --parsable --hold --job-name=safe-qforms --safe-workspace=ml -N2 --gres=gpu -o /dev/null --wrap true)
assert_eq "safe_ws_ml:2" "$(licenses_of "$gres")" "license of -N2 --gres=gpu"
scancel "$gres"

# research's partition is research's: a non-member cannot use it by naming it...
expect_failure "safe: partition 'research' belongs to workspace 'research', of which user 'safe-outsider' is not a member" \
    run_as safe-outsider sbatch -p research --gpus=2 --wrap true
# ...and a member naming it is charged research's quota without --safe-workspace.
mine=$(sbatch --parsable --hold --job-name=safe-qforms -p research --gpus=2 -o /dev/null --wrap true)
assert_eq "safe_ws_research:2" "$(licenses_of "$mine")" "license of a job that named research's partition"
assert_contains "$(admin_comment "$mine")" "ws=research"
scancel "$mine"

# A user's own safe_ws_* license, in any of the forms Slurm's parser accepts, is refused.
for form in ';safe_ws_ml:8' 'safe_ws_ml:8' ',,safe_ws_ml=8'; do
    expect_failure "safe: licenses named safe_ws_* carry workspace GPU quotas" \
        run_as safe-outsider sbatch -L "$form" --wrap true
done

# A heterogeneous job: Slurm tests each component's licenses on its own and starts them together
# (two components of 8 GPUs would run at once on ml's quota of 8), so only one component may take
# GPUs from a quota; a component without GPUs beside it is fine. The charge is held by the leader:
# Slurm 25.11 and later take licenses on no other component.
printf '#!/bin/bash\n#SBATCH --gpus=8\n#SBATCH hetjob\n#SBATCH --gpus=8\ntrue\n' >"$work/het2.sh"
expect_failure "safe: component 1 of this heterogeneous job takes GPUs from workspace 'ml' as an earlier component does" \
    run_as safe-member sbatch --safe-workspace=ml -o /dev/null "$work/het2.sh"
printf '#!/bin/bash\n#SBATCH -n1\n#SBATCH hetjob\n#SBATCH --gpus=8\ntrue\n' >"$work/het1.sh"
het=$(run_as safe-member sbatch --parsable --hold --job-name=safe-qforms --safe-workspace=ml -o /dev/null "$work/het1.sh")
assert_eq "safe_ws_ml:8" "$(licenses_of "${het%%+*}")" "license of the leader of a heterogeneous job with GPUs in component 1"
[[ $(licenses_of "$((${het%%+*} + 1))") != *safe_ws_* ]] || fail "the GPU component holds a license of its own: $(licenses_of "$((${het%%+*} + 1))")"
scancel "${het%%+*}"

# A job array: each running task holds its own license, so the quota bounds the running tasks.
arr=$(run_as safe-member sbatch --parsable --job-name=safe-qforms --safe-workspace=ml --gpus=8 --array=0-1 -o /dev/null \
    --wrap "$hold")
wait_for "[[ \$(squeue -h -r -j $arr -o '%T %r' | sort | tr '\n' ' ') == 'PENDING Licenses RUNNING None ' ]]" 30 \
    "squeue -r -j $arr -o '%i %T %r %W'"
scancel "$arr"
echo "PASS: admission_quota_forms (exclusive, ranges, gres, partitions, licenses and arrays are charged what Slurm gives)"
