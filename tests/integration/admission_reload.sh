#!/usr/bin/env bash
# admission_reload.sh DIR: safe.yaml edited while slurmctld runs takes effect without a restart;
# a broken edit keeps the previous config (and says so in slurmctld's log).
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
original=$(mktemp)
cp "$SAFE_CONFIG" "$original"
restore() {
    cp "$original" "$SAFE_CONFIG"
    rm -f "$original"
}
trap restore EXIT
submit() { sbatch --hold --parsable --job-name=safe-reload-test "$@" --wrap true 2>&1; }

out=$(submit --safe-workspace=fresh || true)
assert_contains "$out" "safe: unknown workspace 'fresh'"

# Add a workspace; the plugin notices the new mtime on the next submission.
sed -i 's/^workspaces:$/workspaces:\n  - name: fresh\n    users: [root]\n    max_retries: 7/' "$SAFE_CONFIG"
safectl config check "$SAFE_CONFIG" >/dev/null || fail "test edit made an invalid config"
jobid=$(submit --safe-workspace=fresh --safe-retries=7) || fail "new workspace not accepted: $jobid"
assert_contains "$(scontrol show job "$jobid")" "retries=0/7"
scancel "$jobid"

# Break the file: the last good config stays in force.
echo "health: [oops" >>"$SAFE_CONFIG"
jobid=$(submit --safe-workspace=fresh) || fail "broken config dropped the previous one: $jobid"
scancel "$jobid"
wait_for "grep -q 'keeping the previous config' '$SAFE_CLUSTER_DIR/log/slurmctld.log'" 10
scontrol ping | grep -q "is UP" || fail "slurmctld is not up"
echo "PASS: admission_reload"
