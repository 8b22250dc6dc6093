#!/usr/bin/env bash
# failover_safed_cut.sh: two safed instances elected in etcd, each in a network namespace of its
# own (safe-cluster up --netns --safed-ha), 4 nodes. The active instance loses its route to
# slurmctld (safe-cluster safed-cut) but still reaches etcd, which keeps its lease alive:
#  - after 3 passes without Slurm it resigns, because the standby says it reaches Slurm; the
#    standby becomes active;
#  - a node then dies under a SaFE job: the new active instance fails the job over, once (Slurm
#    requeues it, safed starts it again at once away from the node);
#  - the old instance, its route back, is the standby and takes no action: no second requeue,
#    no second DOWN.
# (Before: the instance cut off from slurmctld kept the role and nothing failed over.)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfhc
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 4 --safe --netns --safed-ha >/dev/null
use_cluster "$dir"
url_1=$SAFE_CONTROLLER_URL url_2=$SAFE_CONTROLLER_URL_2
log_1=$dir/log/safed.out log_2=$dir/log/safed-2.out
# Instance N's metric NAME. Asked from etcd's address: the cut instance has no route back to the
# host's main address, which slurmctld has.
etcd_addr=$(sed -n 's|.*etcd_endpoints: \[http://\([0-9.]*\):.*|\1|p' "$dir/safe.yaml")
metric() { curl -sf -m 10 --interface "$etcd_addr" "$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
active() { metric "$1" safe_controller_active; }

start_idle_job

t_cut=$(now_ms)
"$SAFE_CLUSTER_BIN" safed-cut --dir "$dir" --instance 1 >/dev/null
wait_for "[[ \$(active $url_2) == 1 ]]" 120 "tail -n 5 $log_1 $log_2"
echo "instance 2 active $((($(now_ms) - t_cut) / 1000)) s after instance 1 lost slurmctld"
grep -q "resigned: Slurm unreachable for .* while the safed at http://.* reaches it" "$log_1" ||
    fail "instance 1 did not say why it resigned: $(tail -n 5 "$log_1")"
assert_eq 0 "$(active "$url_1")" "instance 1 active"

export SAFE_CONTROLLER_URL=$url_2
t0_s=$(date +%s)
"$SAFE_CLUSTER_BIN" kill-node --dir "$dir" --node "$node" >/dev/null
wait_restarted "$job" 1 "$t0_s" 60
"$SAFE_CLUSTER_BIN" safed-heal --dir "$dir" --instance 1 >/dev/null
wait_passes 5
wait_for "[[ \$(metric $url_1 safe_journal_position) == \$(metric $url_2 safe_journal_position) ]]" 15 "tail -n 5 $log_1"
assert_eq 0 "$(active "$url_1")" "instance 1 active after the heal"
assert_eq 1 "$(job_field "$job" Restarts)" "restarts of job $job"
assert_eq 1 "$(safectl job "$job" --json | jq '.failovers | length')" "failovers recorded"
cut_line=$(grep -n "resigned: Slurm unreachable" "$log_1" | head -n1 | cut -d: -f1)
! tail -n "+$cut_line" "$log_1" | grep -E "job $job: (requeue|restart)|node $node: set DOWN" ||
    fail "instance 1 acted after it resigned"
scancel "$job"
echo "PASS: failover_safed_cut (the active safed cut off from slurmctld resigned to the standby, which failed the job over once; the old one took no action)"
