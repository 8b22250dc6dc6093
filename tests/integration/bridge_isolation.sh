#!/usr/bin/env bash
# bridge_isolation.sh DIR: workloads the REST bridge runs for different users on the real cluster
# at DIR cannot reach each other. User A plants a Python .pth hook (code every Python start runs)
# where a shared HOME would hand it to the next workload; user B's workload runs with B's own
# HOME and working directory, owned by B and writable by no one else, and A's hook never runs.
# A bridge whose slurm_work_dir is writable by others refuses to start; with slurm_work_dir ""
# workloads run in the user's own ~/safe-bridge, made as that user.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
[[ -n ${SAFE_BRIDGE_URL:-} ]] || fail "no SAFE_BRIDGE_URL in $1/env: is the cluster up with --safe?"
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
bin=${SAFE_BUILD_DIR:-$src/build}/bin
work=$(mktemp -d /tmp/safe-iso.XXXXXX)
chmod 0755 "$work"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    scancel --name=iso-a --name=iso-b --name=iso-home >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
for u in safe-iso-a safe-iso-b; do
    id "$u" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$u"
done
home_a=$(getent passwd safe-iso-a | cut -d: -f6)
home_b=$(getent passwd safe-iso-b | cut -d: -f6)
rm -rf "$home_a/safe-bridge" "$home_b/safe-bridge" "$home_a/.local" "$home_b/.local" /tmp/safe-iso-pwned

# api URL METHOD PATH USER [BODY]: "STATUS BODY", with a munge credential of USER
api() {
    local args=(-sS -o "$work/body" -w '%{http_code}' -X "$2" -H "Authorization: Munge $(runuser -u "$4" -- munge -n)")
    [[ -n ${5:-} ]] && args+=(-H 'Content-Type: application/json' --data-binary "$5")
    curl "${args[@]}" "$1$3" >"$work/code"
    echo "$(cat "$work/code") $(cat "$work/body")"
}
# run_workload URL USER NAME SCRIPT: creates it, waits until it ended, prints its log
run_workload() {
    local out id
    out=$(api "$1" POST /api/v1/workloads "$2" "{\"name\":\"$3\",\"script\":$(jq -Rs . <<<"$4")}")
    [[ ${out%% *} == 201 ]] || fail "creating $3 as $2: $out"
    id=$(jq -r .id <<<"${out#* }")
    wait_for "[[ \$(api $1 GET /api/v1/workloads/$id $2 | cut -d' ' -f2- | jq -r .phase) =~ ^(Succeeded|Failed)$ ]]" 30 \
        "api $1 GET /api/v1/workloads/$id $2"
    out=$(api "$1" GET "/api/v1/workloads/$id/logs" "$2")
    [[ ${out%% *} == 200 ]] || fail "logs of $3: $out"
    printf '%s' "${out#* }"
}

# A plants a .pth hook in its HOME's site-packages and in its working directory's, as a user
# would to attack a shared one (python3 -m site tells where user site-packages live).
plant='for base in "$HOME" "$PWD"; do
  site=$(HOME=$base python3 -c "import site; print(site.getusersitepackages())")
  mkdir -p "$site" && echo "import os; open(\"/tmp/safe-iso-pwned\", \"a\").write(os.environ.get(\"USER\", \"?\") + \"\\n\")" >"$site/x.pth"
done
echo "planted in $HOME and $PWD"'
log_a=$(run_workload "$SAFE_BRIDGE_URL" safe-iso-a iso-a "$plant")
assert_contains "$log_a" "planted in $home_a and $SAFE_CLUSTER_DIR/bridge-work/safe-iso-a"
check='echo "HOME=$HOME PWD=$PWD"; stat -c "%U %a" "$PWD"; python3 -c "print(\"python ran\")"'
log_b=$(run_workload "$SAFE_BRIDGE_URL" safe-iso-b iso-b "$check")
assert_contains "$log_b" "HOME=$home_b PWD=$SAFE_CLUSTER_DIR/bridge-work/safe-iso-b" "B's home and working directory"
assert_contains "$log_b" "safe-iso-b 700" "B's working directory: B's, mode 0700"
assert_contains "$log_b" "python ran"
[[ ! -e /tmp/safe-iso-pwned ]] || fail "A's .pth hook ran in B's workload: $(cat /tmp/safe-iso-pwned)"

# A base directory others can write: the bridge refuses to start, and says why.
mkdir -p "$work/shared"
chmod 1777 "$work/shared"
set +e
refused=$(timeout 10 "$bin/safe-kube-bridge" --config "$SAFE_CONFIG" --listen 127.0.0.1:0 --work-dir "$work/shared" 2>&1)
rc=$?
set -e
((rc != 0 && rc != 124)) || fail "the bridge started with a world-writable slurm_work_dir (rc $rc): $refused"
assert_contains "$refused" "is writable by its group or by others (mode 1777)"

# The default, slurm_work_dir "": each user's ~/safe-bridge, made by the user.
sed '/^kube_bridge:/,$d' "$SAFE_CONFIG" >"$work/safe.yaml"
"$bin/safe-kube-bridge" --config "$work/safe.yaml" --listen 127.0.0.1:0 --jwt-key-file "$SAFE_CLUSTER_DIR/jwt.key" \
    2>"$work/bridge.log" &
pids+=($!)
wait_for "grep -q 'listening on' $work/bridge.log" 10 "cat $work/bridge.log"
url=$(sed -n 's|.*listening on \(http://[0-9.]*:[0-9]*\).*|\1|p' "$work/bridge.log")
log_home=$(run_workload "$url" safe-iso-b iso-home "$check")
assert_contains "$log_home" "HOME=$home_b PWD=$home_b/safe-bridge" "the default working directory"
assert_contains "$log_home" "safe-iso-b 700"
[[ ! -e /tmp/safe-iso-pwned ]] || fail "A's .pth hook ran: $(cat /tmp/safe-iso-pwned)"
echo "PASS: bridge_isolation (each workload in its user's own HOME and directory; a shared base refused)"
