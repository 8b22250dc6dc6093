#!/usr/bin/env bash
# cluster_netns.sh: the --netns test cluster and its fault verbs, on a 4-node SaFE cluster of its
# own. Each slurmd runs in a network namespace of its own with its own address on the cluster's
# bridge; jobs run across them and reach safed on the host side. `partition` cuts a node's link
# (its slurmd alive, unreachable) and `heal` restores it; `freeze`/`thaw` stop and continue its
# slurmd; `ctld-kill`/`ctld-start` lose and restore the controller. `down`
# leaves no namespace, link or address behind.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfnn
up=$("$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 4 --safe --netns 2>&1) || fail "up --netns failed: $up"
echo "$up" | grep '^cluster up'
use_cluster "$dir"
subnet=$(sed -n 's/^subnet //p' "$dir/run/net")
[[ $subnet =~ ^10\.213\.[0-9]+$ ]] || fail "no subnet recorded in $dir/run/net: $(cat "$dir/run/net")"

# Every slurmd in a namespace of its own, none in the host's; each node at its own address.
host_ns=$(readlink /proc/self/ns/net)
declare -A seen_ns=()
for i in 1 2 3 4; do
    pid=$(awk -v n="slurmd-n$i" '$1 == n { print $2 }' "$dir/run/daemons")
    ns=$(readlink "/proc/$pid/ns/net")
    [[ $ns != "$host_ns" && -z ${seen_ns[$ns]:-} ]] || fail "slurmd of n$i shares a network namespace ($ns)"
    seen_ns[$ns]=1
    assert_eq "$subnet.$((10 + i))" "$(sinfo -h -N -n "n$i" -o %o)" "NodeAddr of n$i"
done

# A job across all four nodes: each task on its node's address, the controller's URL reachable.
out=$(timeout 60 srun -N4 --ntasks-per-node=1 bash -c 'echo "$(hostname -I | tr -d " ") $(curl -s -o /dev/null -w "%{http_code}" "$SAFE_CONTROLLER_URL/healthz")"' | sort)
assert_eq "$(printf '%s 200\n' "$subnet.11" "$subnet.12" "$subnet.13" "$subnet.14")" "$out" "addresses and controller reachability of the tasks"

# reachable NODE: a TCP connection from the host side to the node's slurmd opens within 2 s.
reachable() {
    local port
    port=$(scontrol show node "$1" | grep -o 'Port=[0-9]*' | cut -d= -f2)
    timeout 2 bash -c "exec 3<>/dev/tcp/$subnet.$((10 + ${1#n}))/$port" 2>/dev/null
}
slurmd_state() { awk '/^State:/ { print $2 }' "/proc/$(awk -v n="slurmd-$1" '$1 == n { p = $2 } END { print p }' "$dir/run/daemons")/status"; }

reachable n2 || fail "n2's slurmd is not reachable before the partition"
safe-cluster partition --dir "$dir" --node n2
! reachable n2 || fail "n2's slurmd is reachable while partitioned"
[[ $(slurmd_state n2) =~ ^[SR]$ ]] || fail "n2's slurmd is not running while partitioned: $(slurmd_state n2)"
safe-cluster heal --dir "$dir" --node n2
wait_for "reachable n2" 10 "ip -br link"

safe-cluster freeze --dir "$dir" --node n3
assert_eq T "$(slurmd_state n3)" "state of n3's slurmd when frozen"
safe-cluster thaw --dir "$dir" --node n3
wait_for "[[ \$(slurmd_state n3) =~ ^[SR]\$ ]]" 5 "grep State /proc/*/status"

# The controller dies and comes back; the nodes register with the new one and take jobs. (SIGKILL
# loses what slurmctld had not saved yet, as on a real controller: a job that ended moments before
# may come back RUNNING for a while, holding a CPU of each of its nodes; one that had just started
# may come back PENDING. The controller-fault tests deal with that.)
safe-cluster ctld-kill --dir "$dir"
! sinfo >/dev/null 2>&1 || fail "sinfo answered with slurmctld killed"
safe-cluster ctld-start --dir "$dir"
all_nodes_in_service 30
out=$(timeout 60 srun -N4 --ntasks-per-node=1 hostname -I | tr -d ' ' | sort | paste -sd' ')
assert_eq "$subnet.11 $subnet.12 $subnet.13 $subnet.14" "$out" "a job on all nodes after the controller's restart"

# down removes every namespace and link it made.
down_leaves_no_network
echo "PASS: cluster_netns"
