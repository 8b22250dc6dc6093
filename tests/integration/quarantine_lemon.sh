#!/usr/bin/env bash
# quarantine_lemon.sh: on a cluster of its own (one node, SaFE), a node that faults again and again
# (a simulated GPU fault the health checker drains it for, then cleared) is quarantined by safed
# after failover.lemon_faults (3) faults: a drain with the reserved "SaFE-quarantine:" reason,
# which safed restores if a "SaFE:" drain replaces it, and which only `safectl node release` ends.
# Not on the shared cluster: the shared cluster's config keeps quarantine out of reach, so that
# the faults other tests inject never add up to one they do not expect.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

start_own_cluster sfql 1

node=n1
node_health() { safectl status --json | jq -r --arg n "$node" '.nodes[] | select(.name == $n) | .health'; }

for i in 1 2 3; do
    # A real (simulated) fault: the health checker drains the node with a "SaFE:" reason and keeps
    # it drained until the fault is cleared. (A drain written by hand with such a reason, the
    # checker may resume at its next run before safed has seen it: CI on 24.11 did.)
    safectl inject --node "$node" --gpu "$i" --fault ecc >/dev/null
    wait_for "[[ \$(node_health) == safe_drain || \$(node_health) == quarantined ]]" 30 "safectl status"
    ((i < 3)) || break
    wait_passes 2  # a quarantine for this fault would be decided by now
    [[ $(node_health) != quarantined ]] || fail "$node was quarantined after $i faults"
    # "Healed": the health checker resumes its own drain once the GPU is clean.
    safectl inject --node "$node" --gpu "$i" --fault clear >/dev/null
    wait_for "[[ \$(node_health) == ok ]]" 30 "safectl status"
done
wait_for "[[ \$(node_health) == quarantined ]]" 10 "safectl status; scontrol show node $node"
reason=$(node_reason "$node")
assert_contains "$reason" "SaFE-quarantine: " "reason of $node"
assert_contains "$reason" "safectl node release $node" "reason of $node"
[[ $(sinfo -h -n "$node" -o %T) == drain* ]] || fail "$node is not drained: $(sinfo -h -n "$node" -o %T)"
metrics=$(safed_metrics)
assert_contains "$metrics" "safe_node_quarantined{node=\"$node\"} 1" "metrics"

# A later "SaFE:" drain (the health checker failing it again) must not replace the quarantine,
# and no resume of a SaFE: reason may end it.
scontrol update nodename="$node" state=drain reason="SaFE: gpu0 uncorrectable ECC=9"
wait_for "[[ \$(node_reason $node) == SaFE-quarantine:* ]]" 10 "scontrol show node $node"

safectl inject --node "$node" --gpu 3 --fault clear >/dev/null  # repaired: only the release is left
out=$(safectl node release "$node")
assert_contains "$out" "released $node" "safectl node release"
wait_for "[[ \$(sinfo -h -n $node -o %T) == idle ]]" 10 "sinfo -N"
wait_for "[[ \$(node_health) == ok ]]" 10 "safectl status"
assert_eq 0 "$(safectl status --json | jq '.quarantined | length')" "quarantined nodes after release"
out=$(safectl node release "$node" 2>&1 || true)
assert_contains "$out" "not quarantined" "safectl node release of a healthy node"
echo "PASS: quarantine_lemon ($node quarantined after 3 SaFE drains, kept, released)"
