#!/usr/bin/env bash
# bridge_service.sh DIR: services (kind service) through the REST bridge on the real cluster at
# DIR, each replica a Slurm job running a small HTTP server this test ships (python3's
# http.server: /healthz, and /metrics serving queue_length from a file the test writes):
#  1. 3 replicas become ready; the endpoints list and the endpoints file name them; each replica
#     saw its SAFE_REPLICA and SAFE_SERVICE_PORT, and runs as the service's (non-root) user.
#  2. A GPU fault on one replica's node (safe-healthcheck drains it): that replica is replaced on
#     a healthy node, and the endpoints list, read every 0.2 s, shows at least 2 ready replicas
#     throughout. Prints the time from the fault to the replacement ready, and the availability.
#  3. Scaling: queue_length above target -> maxReplicas; below -> back down after the cooldown.
#  4. Quota: a service whose replica would exceed its workspace's GPU quota waits, visibly
#     (Pending, reason Licenses), and the workspace's training job holding the quota runs on.
#  5. A replica whose command exits 1 every time is reported crash-looping and backed off; the
#     other replica of its service stays ready.
#  6. Stop and delete leave no job of the services behind, and no record or endpoints file.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
[[ -n ${SAFE_BRIDGE_URL:-} ]] || fail "no SAFE_BRIDGE_URL in $1/env: is the cluster up with --safe?"
URL=$SAFE_BRIDGE_URL
STATE=$SAFE_CLUSTER_DIR/bridge-state
work=$(mktemp -d /tmp/safe-service.XXXXXX)
chmod 0755 "$work"
bad="" sampler="" ROOT_JWT="" holder=""
cleanup() {
    [[ -z $sampler ]] || kill "$sampler" 2>/dev/null || true
    [[ -z $holder ]] || scancel "$holder" 2>/dev/null || true
    for s in web scaler quota crasher; do
        curl -sS -o /dev/null -X DELETE -H "Authorization: Bearer $ROOT_JWT" "$URL/api/v1/workloads/svc-$s" || true
    done
    [[ -z $bad ]] || safectl inject --node "$bad" --gpu 0 --fault clear >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
ensure_user safetest
all_nodes_in_service 60

# The replica (tests/lib/service_replica.py), where the user the replicas run as can read it.
cp "$(dirname "${BASH_SOURCE[0]}")/../lib/service_replica.py" "$work/replica.py"
echo 0 >"$work/load"
chmod 0644 "$work/replica.py" "$work/load"

jwt() { scontrol token username="$1" lifespan=900 | sed -n 's/^SLURM_JWT=//p'; }
ROOT_JWT=$(jwt root)
USER_JWT=$(jwt safetest)
api() {  # METHOD PATH [BODY]: the body, as safetest (as root with AS=root); fails on a status other than 2xx
    local token=$USER_JWT
    [[ ${AS:-} != root ]] || token=$ROOT_JWT
    local args=(-sS -f -X "$1" -H "Authorization: Bearer $token")
    [[ -z ${3:-} ]] || args+=(-H 'Content-Type: application/json' --data-binary "$3")
    curl "${args[@]}" "$URL$2"
}
ready_count() { api GET "/api/v1/workloads/svc-$1/endpoints" | jq '[.endpoints[] | select(.ready)] | length'; }
field() { api GET "/api/v1/workloads/svc-$1" | jq -r "$2"; }
service_jobs() { squeue -h -u safetest -o '%i %k' | awk -v s="\"service\":\"$1\"" 'index($0, s) { print $1 }'; }
port=$((20000 + RANDOM % 20000))

# 1. Three replicas, ready.
spec='{"name":"web","kind":"service","command":["/usr/bin/python3","'$work'/replica.py","'$work'/load"],
       "port":'$port',"replicas":3,"gpusPerNode":1,"readinessProbe":{"httpPath":"/healthz"},"labels":{"suite":"service"}}'
created=$(api POST /api/v1/workloads "$spec")
assert_eq "svc-web service Pending" "$(jq -r '"\(.id) \(.kind) \(.phase)"' <<<"$created")" "the created service"
wait_for "[[ \$(ready_count web) == 3 ]]" 60 "api GET /api/v1/workloads/svc-web; squeue"
assert_eq "Running 3 3" "$(field web '"\(.phase) \(.replicas.desired) \(.replicas.ready)"')" "the service's view"
endpoints=$(api GET /api/v1/workloads/svc-web/endpoints)
assert_eq "$port $((port + 1)) $((port + 2))" "$(jq -r '[.endpoints[].port] | sort | map(tostring) | join(" ")' <<<"$endpoints")" \
    "the replicas' ports (the nodes share 127.0.0.1: one port each)"
assert_eq "$endpoints" "$(cat "$STATE/endpoints/web.json")" "the endpoints file"
for e in $(jq -r '.endpoints[] | "\(.host):\(.port)"' <<<"$endpoints"); do
    assert_eq "ok" "$(curl -sS "http://$e/healthz")" "replica at $e"
done
logs=$(api GET "/api/v1/workloads/svc-web/logs?replica=2")
assert_contains "$logs" "replica 2 port $((port + 2)) user $(id -u safetest)" "replica 2's log"
# Its jobs are the service's, not workloads of their own; another user sees none of it.
listed=$(api GET /api/v1/workloads | jq -r '.items[].id')
assert_contains "$listed" "svc-web" "the workloads list"
for job in $(service_jobs web); do
    [[ $listed != *"slurm-$job"* ]] || fail "replica job $job listed as a workload of its own: $listed"
done
code=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(jwt nobody)" "$URL/api/v1/workloads/svc-web/endpoints")
assert_eq 404 "$code" "another user's read of the endpoints"

# 2. A GPU fault under one replica: it is replaced on a healthy node, the others keep serving.
victim=$(jq -r '.replicas.items[0] | "\(.jobId) \(.node)"' <<<"$(api GET /api/v1/workloads/svc-web)")
old_job=${victim% *} bad=${victim#* }
echo "ready_samples" >"$work/samples"
(while :; do
    echo "$(date +%s%3N) $(ready_count web 2>/dev/null || echo err)"
    sleep 0.2
done >>"$work/samples") &
sampler=$!
t0=$(date +%s%3N)
safectl inject --node "$bad" --gpu 0 --fault ecc >/dev/null
replaced() { [[ $(field web '.replicas.items[0] | "\(.jobId) \(.ready)"') =~ ^([0-9]+)\ true$ && ${BASH_REMATCH[1]} != "$old_job" ]]; }
wait_for replaced 90 "api GET /api/v1/workloads/svc-web; api GET /api/v1/workloads/svc-web/events; scontrol show node $bad"
t_ready=$(date +%s%3N)
new_node=$(field web '.replicas.items[0].node')
[[ $new_node != "$bad" ]] || fail "replica 0 was replaced on the faulty node $bad"
wait_for "[[ \$(squeue -h -j $old_job -o %T 2>/dev/null) != RUNNING ]]" 15 "squeue -j $old_job"
sleep 1  # one more second of samples after the old job went
kill "$sampler"
sampler=""
samples=$(awk 'NR > 1' "$work/samples")
[[ -n $samples ]] || fail "no samples of the endpoints"
min_ready=$(awk '{ v = ($2 == "err") ? -1 : $2; if (min == "" || v < min) min = v } END { print min }' <<<"$samples")
((min_ready >= 2)) || fail "fewer than 2 replicas ready during the fault (min $min_ready):"$'\n'"$samples"
read -r n any all < <(awk '{ n++; if ($2 + 0 >= 1) a++; if ($2 + 0 >= 3) b++ } END { print n, a, b }' <<<"$samples")
echo "service: GPU fault on $bad to replacement ready on $new_node: $((t_ready - t0)) ms;" \
    "samples $n, with a ready replica $any ($((100 * any / n))%), with all 3 ready $all ($((100 * all / n))%)"
events=$(api GET /api/v1/workloads/svc-web/events | jq -r '[.items[].type] | join(" ")')
assert_contains "$events" "NodeUnhealthy" "events"
assert_contains "$events" "ReplicaReplaced" "events"
safectl inject --node "$bad" --gpu 0 --fault clear >/dev/null
bad=""
api DELETE /api/v1/workloads/svc-web >/dev/null
wait_for "[[ -z \$(service_jobs web) ]]" 30 "squeue -u safetest -o '%i %T %k'"
# Its record goes at the first pass that finds none of its jobs running.
wait_for "[[ ! -e $STATE/services/web.json && ! -e $STATE/endpoints/web.json ]]" 10 "ls -R $STATE"

# 3. Scaling on queue_length, 10 per replica, from 1 up to 3 and back.
spec='{"name":"scaler","kind":"service","command":["/usr/bin/python3","'$work'/replica.py","'$work'/load"],"port":'$((port + 10))',
       "minReplicas":1,"maxReplicas":3,"readinessProbe":{"httpPath":"/healthz"},
       "scaling":{"metric":"queue_length","targetPerReplica":10,"cooldownSeconds":5}}'
api POST /api/v1/workloads "$spec" >/dev/null
wait_for "[[ \$(ready_count scaler) == 1 ]]" 60 "api GET /api/v1/workloads/svc-scaler"
t0=$(date +%s%3N)
echo 25 >"$work/load"  # one replica reports 25: 3 wanted
wait_for "[[ \$(ready_count scaler) == 3 ]]" 60 "api GET /api/v1/workloads/svc-scaler; api GET /api/v1/workloads/svc-scaler/events"
echo "service: queue above target to 3 replicas ready: $(($(date +%s%3N) - t0)) ms"
echo 1 >"$work/load"  # three replicas report 1 each: 1 wanted, after the 5 s cooldown
t0=$(date +%s%3N)
wait_for "[[ \$(field scaler .replicas.desired) == 1 ]]" 60 "api GET /api/v1/workloads/svc-scaler/events"
waited=$(($(date +%s%3N) - t0))
((waited >= 4000)) || fail "scaled down after ${waited} ms, before the 5 s cooldown"
wait_for "[[ \$(service_jobs scaler | wc -l) == 1 ]]" 30 "squeue -u safetest -o '%i %T %k'"
assert_contains "$(api GET /api/v1/workloads/svc-scaler/events | jq -r '[.items[].type] | join(" ")')" "ScaledUp ReplicaStarted" "events"

# 4. Workspace console's quota is 1 GPU: a training job holds it, the service's replica waits.
holder=$(sbatch --parsable --safe-workspace=console --gpus-per-node=1 -o /dev/null --wrap "sleep 600")
wait_for "[[ \$(squeue -h -j $holder -o %T) == RUNNING ]]" 30 "squeue -j $holder -o '%i %T %r'"
AS=root api POST /api/v1/workloads '{"name":"quota","kind":"service","workspace":"console","gpusPerNode":1,
    "command":["/usr/bin/python3","'$work'/replica.py","'$work'/load"],"port":'$((port + 30))',"readinessProbe":{"httpPath":"/healthz"}}' >/dev/null
wait_for "[[ \$(AS=root field quota '.replicas.items[0] | \"\\(.state) \\(.reason)\"') == 'Pending Licenses' ]]" 30 \
    "AS=root api GET /api/v1/workloads/svc-quota; squeue -o '%i %T %r %W'"
sleep 2  # the replica keeps waiting; the job holding the quota is not preempted
assert_eq "RUNNING" "$(squeue -h -j "$holder" -o %T)" "the workspace's training job"
assert_eq "Pending Licenses" "$(AS=root field quota '.replicas.items[0] | "\(.state) \(.reason)"')" "the waiting replica"
scancel "$holder"
holder=""
wait_for "[[ \$(AS=root ready_count quota) == 1 ]]" 60 "AS=root api GET /api/v1/workloads/svc-quota"
AS=root api DELETE /api/v1/workloads/svc-quota >/dev/null

# 5. Replica 1 exits 1 every time: crash-looping and backed off; replica 0 keeps serving.
spec='{"name":"crasher","kind":"service","script":"[ \"$SAFE_REPLICA\" = 1 ] && exit 1\nexec /usr/bin/python3 '$work'/replica.py '$work'/load",
       "port":'$((port + 20))',"replicas":2,"readinessProbe":{"httpPath":"/healthz"}}'
api POST /api/v1/workloads "$spec" >/dev/null
wait_for "[[ \$(field crasher '.replicas.items[1].crashLooping') == true ]]" 90 "api GET /api/v1/workloads/svc-crasher"
view=$(api GET /api/v1/workloads/svc-crasher)
assert_eq "Ready true" "$(jq -r '.replicas.items[0] | "\(.state) \(.ready)"' <<<"$view")" "replica 0"
assert_contains "$(jq -r '.replicas.items[1].lastFailure' <<<"$view")" "exit code 1" "replica 1's last failure"
restarts=$(jq -r '.replicas.items[1].restarts' <<<"$view")
((restarts >= 3)) || fail "crash-looping after $restarts restarts"
assert_contains "$(api GET /api/v1/workloads/svc-crasher/events | jq -r '.items[].type')" "CrashLooping" "events"
# Backed off: in the next 3 s it starts at most once more (its next wait is 4 s or more).
sleep 3
again=$(field crasher '.replicas.items[1].restarts')
((again <= restarts + 1)) || fail "replica 1 restarted $((again - restarts)) times in 3 s while crash-looping"

# 6. Stop, then delete: no job left, no file.
stopped=$(api POST /api/v1/workloads/svc-crasher/stop)
assert_eq "Stopped" "$(jq -r .phase <<<"$stopped")" "stop"
wait_for "[[ -z \$(service_jobs crasher) ]]" 30 "squeue -u safetest -o '%i %T %k'"
assert_eq "Stopped 0" "$(field crasher '"\(.phase) \(.replicas.desired)"')" "a stopped service"
for s in scaler crasher; do api DELETE "/api/v1/workloads/svc-$s" >/dev/null; done
wait_for "[[ -z \$(service_jobs scaler) ]]" 30 "squeue -u safetest -o '%i %T %k'"
wait_for "[[ -z \$(find $STATE -type f) ]]" 10 "find $STATE -type f"
echo "bridge_service: ok"
