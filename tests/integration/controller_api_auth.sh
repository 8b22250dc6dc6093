#!/usr/bin/env bash
# controller_api_auth.sh DIR: safed's HTTP API on the --safe cluster at DIR is not open to anyone
# who can reach it. Without credentials only /healthz and /metrics answer (401 for /api/v1); an
# ordinary user made by the test, through safectl (munge), sees only their own jobs, reads
# another user's job as missing and may not release a quarantine (403); root (auth.admins) sees
# both users' jobs. A credential that carries a payload is no Authorization (401). A body over the
# limit is refused (413) before it is read.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
[[ -n ${SAFE_CONTROLLER_URL:-} ]] || fail "no SAFE_CONTROLLER_URL in $1/env: is the cluster up with --safe?"
work=$(mktemp -d /tmp/safe-apiauth.XXXXXX)
trap 'scancel --name=safe-apiauth >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
ensure_user safe-member
as_member() {
    runuser -u safe-member -- env SLURM_CONF="$SLURM_CONF" PATH="$PATH" SAFE_CONTROLLER_URL="$SAFE_CONTROLLER_URL" "$@"
}
code() { curl -sS -o "$work/body" -w '%{http_code}' "$@"; }

# Without credentials.
assert_eq 200 "$(code "$SAFE_CONTROLLER_URL/healthz")" "/healthz without credentials"
assert_eq 200 "$(code "$SAFE_CONTROLLER_URL/metrics")" "/metrics without credentials"
for path in /api/v1/status /api/v1/jobs /api/v1/jobs/1; do
    assert_eq 401 "$(code "$SAFE_CONTROLLER_URL$path")" "$path without credentials"
    assert_contains "$(cat "$work/body")" "authentication required"
done
assert_eq 401 "$(code -X POST "$SAFE_CONTROLLER_URL/api/v1/nodes/n1/release")" "release without credentials"
assert_eq 401 "$(code -H 'Authorization: Munge not-a-credential' "$SAFE_CONTROLLER_URL/api/v1/jobs")" "a forged credential"
# Root's credential that carries a payload, as a node's GPU grid comes (taken on its way): it opens
# no route as an Authorization header, on safed or on the bridge.
assert_eq 401 "$(code -H "Authorization: Munge $(munge -s '{"node":"n1"}')" "$SAFE_CONTROLLER_URL/api/v1/jobs")" \
    "root's credential carrying a payload, on safed"
assert_contains "$(cat "$work/body")" "it carries a payload"
if [[ -n ${SAFE_BRIDGE_URL:-} ]]; then
    assert_eq 401 "$(code -H "Authorization: Munge $(munge -s '{"node":"n1"}')" "$SAFE_BRIDGE_URL/api/v1/workloads")" \
        "root's credential carrying a payload, on the bridge"
fi

# One job of each user, tracked by safed.
theirs=$(sbatch --parsable --job-name=safe-apiauth -o /dev/null --wrap 'sleep 300')
mine=$(as_member sbatch --parsable --job-name=safe-apiauth -o /dev/null --wrap 'sleep 300')
has_job() { jq -e --argjson id "$2" '[.jobs[].job_id] | index($id) != null' <<<"$1" >/dev/null; }
wait_for "has_job \"\$(safectl jobs --all --json)\" $theirs && has_job \"\$(safectl jobs --all --json)\" $mine" 30 \
    "safectl jobs --all"

# The user: their own job only.
listed=$(as_member safectl jobs --all --json)
has_job "$listed" "$mine" || fail "safe-member does not see their own job $mine: $listed"
! has_job "$listed" "$theirs" || fail "safe-member sees root's job $theirs: $listed"
status=$(as_member safectl status --json)
! has_job "$status" "$theirs" || fail "safe-member's status shows root's job $theirs"
as_member safectl job "$mine" >/dev/null || fail "safe-member cannot read their own job $mine"
if out=$(as_member safectl job "$theirs" 2>&1); then fail "safe-member read root's job $theirs: $out"; fi
assert_contains "$out" "no SaFE job with that id visible to you"
if out=$(as_member safectl node release n1 2>&1); then fail "safe-member released a node: $out"; fi
assert_contains "$out" "releasing a quarantined node is for administrators"

# The admin: everyone's.
listed=$(safectl jobs --all --json)
has_job "$listed" "$mine" && has_job "$listed" "$theirs" || fail "root does not see both jobs: $listed"

# A body over safed's limit (1 MiB: a node's GPU grid in its munge credential is the only body it
# takes) is refused before it is read. Sent at once
# with its headers, the body raced the 413 and the close behind it (CI, on a busy machine: "Send
# failure: Broken pipe", code 000): curl asks first (Expect: 100-continue) and waits for the
# answer. A safed that read the body would answer otherwise.
head -c 2097152 /dev/zero >"$work/big"
assert_eq 413 "$(code -H 'Expect: 100-continue' --expect100-timeout 60 -X POST -H "Authorization: Munge $(munge -n)" --data-binary @"$work/big" \
    "$SAFE_CONTROLLER_URL/api/v1/nodes/n1/release")" "a 2 MiB body"
assert_eq 200 "$(code "$SAFE_CONTROLLER_URL/healthz")" "/healthz after the large body"
echo "PASS: controller_api_auth (401 without credentials, users see their own jobs, 403 for release, 413 for a large body)"
