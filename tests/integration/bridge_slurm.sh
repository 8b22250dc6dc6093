#!/usr/bin/env bash
# bridge_slurm.sh DIR: the REST bridge (safe-kube-bridge, started by safe-cluster up --safe) on
# the real cluster at DIR: JWT from `scontrol token` and munge credentials, workloads that run
# with the SaFE environment, list/get/logs/events/stop/delete, workspace policy applied by
# job_submit_safe for the job's user (a non-root user), isolation between users, validation
# errors and hostile input answered with clean 4xx while the server keeps serving.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
[[ -n ${SAFE_BRIDGE_URL:-} ]] || fail "no SAFE_BRIDGE_URL in $1/env: is the cluster up with --safe?"
URL=$SAFE_BRIDGE_URL
work=$(mktemp -d /tmp/safe-bridge.XXXXXX)
trap 'scancel --name=bridge-sleep >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
ensure_user safetest

# api METHOD PATH AUTH [BODY]: prints "STATUS BODY"
api() {
    local method=$1 path=$2 auth=$3 body=${4:-} args=()
    [[ -n $auth ]] && args+=(-H "Authorization: $auth")
    # Always a body (maybe empty) for POST and PUT, with its Content-Length.
    [[ -n $body || $method == POST || $method == PUT ]] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
    curl -sS -o "$work/body" -w '%{http_code}' -X "$method" "${args[@]}" "$URL$path" >"$work/code"
    echo "$(cat "$work/code") $(cat "$work/body")"
}
# expect STATUS METHOD PATH AUTH [BODY]: the response body, after checking the status
expect() {
    local status=$1 out
    shift
    out=$(api "$@")
    [[ ${out%% *} == "$status" ]] || fail "$1 $2: expected HTTP $status, got: $out"
    printf '%s' "${out#* }"
}
jwt() { scontrol token username="$1" lifespan=600 | sed -n 's/^SLURM_JWT=//p'; }
munge_as() { runuser -u "$1" -- munge -n; }
phase() { expect 200 GET "/api/v1/workloads/$1" "Bearer $ROOT_JWT" | jq -r .phase; }

ROOT_JWT=$(jwt root)
USER_JWT=$(jwt safetest)
[[ -n $ROOT_JWT && -n $USER_JWT ]] || fail "scontrol token gave no token (is AuthAltTypes=auth/jwt set?)"

# Unauthenticated and badly authenticated requests.
expect 200 GET /healthz "" >/dev/null
assert_contains "$(expect 401 GET /api/v1/workloads "")" "authentication required"
assert_contains "$(expect 401 GET /api/v1/workloads "Bearer ${ROOT_JWT}x")" "signature does not verify"
assert_contains "$(expect 401 GET /api/v1/workloads "Munge MUNGE:garbage")" "munge credential rejected"
assert_contains "$(expect 401 GET /api/v1/workloads "Basic cm9vdDpyb290")" "unsupported authorization scheme"
cred=$(munge_as safetest)
expect 200 GET /api/v1/workloads "Munge $cred" >/dev/null
assert_contains "$(expect 401 GET /api/v1/workloads "Munge $cred")" "Replayed credential"

# A workload with a JWT (root, workspace ml): runs with the SaFE environment.
spec='{"name":"bridge-env","workspace":"ml","retries":2,"checkpoint":{"dir":"'$work'/ckpt","signal":"USR2","graceSeconds":30},
       "command":["bash","-c","id -un; env | grep ^SAFE_ | sort"],"gpusPerNode":1,"labels":{"suite":"bridge"}}'
created=$(expect 201 POST /api/v1/workloads "Bearer $ROOT_JWT" "$spec")
id=$(jq -r .id <<<"$created")
[[ $id =~ ^slurm-[0-9]+$ ]] || fail "bad id in $created"
wait_for "[[ \$(phase $id) == Succeeded ]]" 30 "api GET /api/v1/workloads/$id 'Bearer $ROOT_JWT'"
logs=$(expect 200 GET "/api/v1/workloads/$id/logs" "Bearer $ROOT_JWT")
assert_contains "$logs" "SAFE_WORKSPACE=ml" "logs"
assert_contains "$logs" "SAFE_ATTEMPT=1" "logs"
assert_contains "$logs" "SAFE_MAX_RETRIES=2" "logs"
assert_contains "$logs" "SAFE_CKPT_DIR=$work/ckpt" "logs"
assert_contains "$logs" "SAFE_CKPT_SIGNAL=USR2@30" "logs"
assert_contains "$(scontrol show job "${id#slurm-}")" "AdminComment=safe: ws=ml retries=0/2" "the job_submit plugin's record"
got=$(expect 200 GET "/api/v1/workloads/$id" "Munge $(munge -n)")
assert_eq "ml bridge root 0" "$(jq -r '"\(.workspace) \(.labels.suite) \(.user) \(.exitCode)"' <<<"$got")" "workload view"
event_types() { expect 200 GET "/api/v1/workloads/$id/events" "Bearer $ROOT_JWT" | jq -r '[.items[].type] | join(" ")'; }
# Slurm's events, then safed's history of the job (the fixture cluster runs safed, which records a
# job within a poll or two): one attempt.
wait_for '[[ $(event_types) == *Attempt* ]]' 15 event_types
events=$(expect 200 GET "/api/v1/workloads/$id/events" "Bearer $ROOT_JWT")
assert_eq "Submitted Started Succeeded" "$(jq -r '[.items[].type][0:3] | join(" ")' <<<"$events")" "events from Slurm"
assert_eq "Attempt" "$(jq -r '[.items[].type][3:] | join(" ")' <<<"$events")" "events from safed"

# A non-root user with munge: the job runs as that user; policy is applied by job_submit_safe
# inside slurmctld to the job's user (safetest), though the bridge submits as root.
created=$(expect 201 POST /api/v1/workloads "Munge $(munge_as safetest)" '{"name":"bridge-user","script":"id -un"}')
uid_id=$(jq -r .id <<<"$created")
wait_for "[[ \$(phase $uid_id) == Succeeded ]]" 30
assert_eq "safetest" "$(expect 200 GET "/api/v1/workloads/$uid_id/logs" "Bearer $USER_JWT")" "job user"
refused=$(expect 403 POST /api/v1/workloads "Bearer $USER_JWT" '{"name":"bridge-nope","workspace":"ml","script":"true"}')
assert_contains "$refused" "safe: user 'safetest' is not a member of workspace 'ml'"
wait_for "grep -q 'job_submit/safe: rejected a job of safetest: safe: user .safetest. is not a member of workspace .ml.' '$SAFE_CLUSTER_DIR/log/slurmctld.log'" 10 \
    "grep job_submit/safe '$SAFE_CLUSTER_DIR/log/slurmctld.log' | tail -3"

# Users see their own workloads only; admins (root) see all. Another's reads as missing.
mine=$(expect 200 GET /api/v1/workloads "Bearer $USER_JWT")
mine_ids=" $(jq -r '[.items[].id] | join(" ")' <<<"$mine") "
assert_contains "$mine_ids" " $uid_id " "safetest's list"
[[ $mine_ids != *" $id "* ]] || fail "safetest's list shows root's workload $id: $mine_ids"
[[ $(jq -r '[.items[].user] | unique | join(" ")' <<<"$mine") == safetest ]] || fail "safetest's list has others' workloads: $mine"
other=$(expect 404 GET "/api/v1/workloads/$id" "Bearer $USER_JWT")
missing=$(expect 404 GET "/api/v1/workloads/slurm-999999" "Bearer $USER_JWT")
assert_eq "${missing#*\' }" "${other#*\' }" "another's workload and a missing one"
expect 404 POST "/api/v1/workloads/$id/stop" "Bearer $USER_JWT" >/dev/null
expect 404 GET "/api/v1/workloads/$id/logs" "Bearer $USER_JWT" >/dev/null
all=$(expect 200 GET "/api/v1/workloads?target=slurm&limit=1000" "Bearer $ROOT_JWT")
assert_contains "$(jq -r '[.items[].id] | join(" ")' <<<"$all")" "$uid_id" "root's list"

# Stop and delete cancel the job.
created=$(expect 201 POST /api/v1/workloads "Bearer $USER_JWT" '{"name":"bridge-sleep","command":["sleep","300"]}')
sleep_id=$(jq -r .id <<<"$created")
wait_for "[[ \$(phase $sleep_id) == Running ]]" 30
expect 202 POST "/api/v1/workloads/$sleep_id/stop" "Bearer $USER_JWT" >/dev/null
wait_for "[[ \$(phase $sleep_id) == Stopped ]]" 30
running=$(expect 200 GET "/api/v1/workloads?state=Running" "Bearer $USER_JWT")
assert_eq 0 "$(jq -r .total <<<"$running")" "running workloads after stop"
assert_eq 1 "$(expect 200 GET "/api/v1/workloads?state=stopped" "Bearer $USER_JWT" | jq -r '[.items[] | select(.id == "'"$sleep_id"'")] | length')" "the state filter in lower case"
assert_contains "$(expect 422 GET "/api/v1/workloads?state=Runing" "Bearer $USER_JWT")" "expects Pending, Running, Stopped, Succeeded or Failed" "a misspelt state"
expect 200 DELETE "/api/v1/workloads/$sleep_id" "Bearer $USER_JWT" >/dev/null
expect 404 GET "/api/v1/workloads/$sleep_id" "Bearer $USER_JWT" >/dev/null

# Workspaces and nodes.
ws=$(expect 200 GET /api/v1/workspaces "Bearer $ROOT_JWT")
assert_eq "ml research console" "$(jq -r '[.items[].name] | join(" ")' <<<"$ws")" "root's workspaces"
assert_eq 0 "$(expect 200 GET /api/v1/workspaces "Bearer $USER_JWT" | jq '.items | length')" "safetest's workspaces"
expect 404 GET /api/v1/workspaces/ml "Bearer $USER_JWT" >/dev/null
nodes=$(expect 200 GET /api/v1/nodes "Bearer $USER_JWT")
assert_eq "n1 n2 n3 n4" "$(jq -r '[.items[].name] | join(" ")' <<<"$nodes")" "nodes"

# Validation: every bad field by path, with the CLI's messages.
bad='{"name":"Bad","command":"x","nodes":0,"retries":99,"health":"max","checkpoint":{"dir":"/ckpt/../etc"},"colour":1}'
errs=$(expect 422 POST /api/v1/workloads "Bearer $USER_JWT" "$bad")
assert_eq "checkpoint.dir colour command health name nodes retries" "$(jq -r '[.fields[].path] | sort | join(" ")' <<<"$errs")" "bad fields"
assert_contains "$errs" "safe: --safe-retries expects an integer 0..50, got '99'"
assert_contains "$errs" "safe: --safe-ckpt-dir expects a path without '..'"

# Hostile input: clean 4xx, and the server keeps serving.
expect 400 POST /api/v1/workloads "Bearer $USER_JWT" '{"name": "x",' >/dev/null
expect 400 POST /api/v1/workloads "Bearer $USER_JWT" "$(printf '%*s' 100000 '' | tr ' ' '[')" >/dev/null
expect 422 POST /api/v1/workloads "Bearer $USER_JWT" '{"name":1,"script":[],"env":[],"labels":"x"}' >/dev/null
head -c 2000000 /dev/zero | tr '\0' 'a' >"$work/huge"
# curl asks first (Expect: 100-continue) and waits for the bridge's answer: a body sent anyway
# (after 1 s by default) races the 413 and the close behind it on a busy machine.
code=$(curl -sS -H 'Expect: 100-continue' --expect100-timeout 60 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $USER_JWT" \
    --data-binary @"$work/huge" "$URL/api/v1/workloads")
assert_eq 413 "$code" "2 MB body"
for path in "/api/v1/workloads/..%2F..%2Fetc%2Fpasswd" "/api/v1/workloads/slurm-1%2F..%2F.." "/api/v1/workloads/%00" "/../../etc/passwd"; do
    code=$(curl -sS --path-as-is -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $USER_JWT" "$URL$path")
    [[ $code == 404 || $code == 400 ]] || fail "$path: expected 404 or 400, got $code"
done
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "X-Junk: $(head -c 100000 /dev/zero | tr '\0' 'h')" "$URL/healthz")
[[ $code == 4* ]] || fail "a 100 kB header: expected 4xx, got $code"
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(head -c 20000 /dev/zero | tr '\0' 'a')" "$URL/api/v1/nodes")
[[ $code == 401 || $code == 4* ]] || fail "a 20 kB token: expected 401, got $code"
expect 405 PUT /api/v1/workloads "Bearer $USER_JWT" >/dev/null
expect 200 GET /healthz "" >/dev/null
grep -q 'user=safetest method=GET path=/api/v1/workloads status=200 duration_ms=' "$SAFE_CLUSTER_DIR/log/safe-kube-bridge.out" ||
    fail "requests are not logged with user, method, path, status and duration"
metrics=$(expect 200 GET /metrics "")
assert_contains "$metrics" 'safe_bridge_requests_total{code="4xx"}'
echo "bridge_slurm: ok"
