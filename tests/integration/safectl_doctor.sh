#!/usr/bin/env bash
# safectl_doctor.sh DIR: `safectl doctor` on the --safe cluster at DIR passes on the cluster as
# installed, then fails the right check, and only that one, with one thing broken at a time:
# safe.yaml invalid, safe.yaml not the one safed runs with, this host's plugstack without SaFE,
# safed unreachable, a named bridge unreachable, a node Slurm does not know; and safe.yaml edited
# on the controller, until safed is told (SIGHUP). Each failure says
# what to do (a "fix:" line) and the exit status is 1.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
# Its node check wants n1 in service: a node a fault test broke comes back once the health
# checker has seen it clean a few times (this test shares main_cluster_nodes with those tests).
all_nodes_in_service 60
work=$(mktemp -d /tmp/safe-doctor.XXXXXX)
trap 'rm -rf "$work"' EXIT

# verdict JSON NAME: the named check's verdict.
verdict() { jq -r --arg n "$2" '.checks[] | select(.name == $n) | .verdict' <<<"$1"; }
# failed JSON: the failed checks' names, space-separated.
failed() { jq -r '[.checks[] | select(.verdict == "fail") | .name] | join(" ")' <<<"$1"; }
# doctor ARGS...: its JSON; the exit status in $rc.
doctor() { rc=0; out=$(safectl doctor --json "$@") || rc=$?; }

# As installed: nothing fails, with the bridge the cluster runs named.
doctor --node n1 --bridge "$SAFE_BRIDGE_URL"
assert_eq 0 "$rc" "doctor's exit status on the cluster as installed: $out"
assert_eq "" "$(failed "$out")" "failed checks on the cluster as installed"
for name in config munge slurmctld job-submit licenses plugstack health-check prolog epilog scheduler-parameters \
    health-state versions node safed config-same bridge clock; do
    assert_eq ok "$(verdict "$out" "$name")" "check $name on the cluster as installed"
done
text=$(safectl doctor --node n1 --bridge "$SAFE_BRIDGE_URL")
assert_contains "$text" "ready: 0 failed"
assert_contains "$(jq -r '.checks[] | select(.name == "versions") | .detail' <<<"$out")" "2 plugins of that release"

# expect_only NAME TEXT ARGS...: doctor with ARGS exits 1, NAME is the one failed check, and the
# text output says TEXT and how to fix it.
expect_only() {
    local name=$1 says=$2
    shift 2
    doctor "$@"
    assert_eq 1 "$rc" "doctor's exit status with $name broken"
    assert_eq "$name" "$(failed "$out")" "the failed checks with $name broken"
    text=$(safectl doctor "$@" 2>&1) && fail "doctor passed with $name broken: $text"
    assert_contains "$text" "$says"
    grep -A1 "^FAIL  $name " <<<"$text" | grep -q "fix: " || fail "no fix for $name: $text"
    assert_contains "$text" "not ready: 1 failed"
}

# safe.yaml: invalid here (config-same cannot be judged then: skipped).
printf 'workspaces:\n  - name: ml\n    gpu_qouta: 8\n' >"$work/invalid.yaml"
expect_only config "gpu_qouta" --node n1 --config "$work/invalid.yaml"
# Valid, but not the file safed runs with.
{ cat "$SAFE_CONFIG"; echo "# edited on this host only"; } >"$work/edited.yaml"
expect_only config-same "is not the safe.yaml safed runs with" --node n1 --config "$work/edited.yaml"

# This host's plugstack without SaFE's line: sbatch here offers no --safe-* options (slurmctld,
# asked by scontrol, is unchanged).
: >"$work/plugstack.conf"
sed "s|^PlugStackConfig=.*|PlugStackConfig=$work/plugstack.conf|" "$SLURM_CONF" >"$work/slurm.conf"
grep -q "^PlugStackConfig=$work/plugstack.conf" "$work/slurm.conf" || fail "the cluster's slurm.conf has no PlugStackConfig line"
SLURM_CONF=$work/slurm.conf expect_only plugstack "offers no --safe-* options" --node n1

# This host's health.state_dir is not the one the nodes write (as on a site whose nodes keep it on
# a local disk): a warning that names the directory and the fix (config-same fails as well: the
# file is not safed's).
mkdir "$work/health-elsewhere"
sed "s|^\(  state_dir: \).*/health\$|\1$work/health-elsewhere|" "$SAFE_CONFIG" >"$work/unshared.yaml"
grep -q "^  state_dir: $work/health-elsewhere\$" "$work/unshared.yaml" || fail "the cluster's safe.yaml has no health state_dir line"
doctor --node n1 --config "$work/unshared.yaml"
assert_eq warn "$(verdict "$out" health-state)" "health-state with an unshared health.state_dir"
assert_contains "$(jq -r '.checks[] | select(.name == "health-state") | "\(.detail) \(.fix)"' <<<"$out")" \
    " other nodes have fresh health state in $work/health-elsewhere here"

# safed unreachable: its checks fail, the clock (told by safed's answers) is not judged.
expect_only safed "does not answer" --node n1 --url http://127.0.0.1:1
assert_eq skip "$(verdict "$out" clock)" "the clock check without safed"
assert_eq skip "$(verdict "$out" config-same)" "config-same without safed"

# A bridge named that does not answer fails; unnamed, a missing bridge is a warning only.
expect_only bridge "does not answer" --node n1 --bridge http://127.0.0.1:1
doctor --node n1
assert_eq 0 "$rc" "doctor without --bridge: $out"

# safe.yaml edited on the controller without telling safed: config-same fails until safed is
# reloaded (SIGHUP: the digest safed reports is the file it read last). The edit is a comment, and
# each write is a rename: the other tests on this cluster read safe.yaml meanwhile.
safed=$(cluster_pids_of "$SAFE_CLUSTER_DIR" safed | head -n1)
[[ -n $safed ]] || fail "safed is not running"
cp "$SAFE_CONFIG" "$work/original.yaml"
restore() { cp "$work/original.yaml" "$SAFE_CONFIG.doctor" && mv "$SAFE_CONFIG.doctor" "$SAFE_CONFIG" && kill -HUP "$safed"; }
trap 'restore || true; rm -rf "$work"' EXIT
{ cat "$work/original.yaml"; echo "# edited on the controller"; } >"$SAFE_CONFIG.doctor"
mv "$SAFE_CONFIG.doctor" "$SAFE_CONFIG"
expect_only config-same "is not the safe.yaml safed runs with" --node n1
kill -HUP "$safed"
wait_for "safectl doctor --node n1 >/dev/null" 10 "safectl doctor --node n1"
restore
wait_for "safectl doctor --node n1 >/dev/null" 10 "safectl doctor --node n1"

# A node Slurm does not know.
expect_only node "Slurm has no node n99" --node n99
echo "ok: safectl doctor passes as installed and fails the one broken check, with its fix"
