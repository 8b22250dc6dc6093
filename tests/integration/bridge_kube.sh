#!/usr/bin/env bash
# bridge_kube.sh DIR: the bridge's Kubernetes target against the Kubernetes API double
# (tests/kube/kube_api_double.py; no real API server can run here), with a second bridge started
# for it beside the cluster at DIR: create -> Running -> Succeeded; a node fault fails over
# (node tainted, Job recreated without it, attempt 2); a user error fails without retry; retries
# exhausted; the watches survive dropped connections and a compacted history (410 Gone).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
bin=${SAFE_BUILD_DIR:-$src/build}/bin
work=$(mktemp -d /tmp/safe-kube.XXXXXX)
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

python3 "$src/tests/kube/kube_api_double.py" --port-file "$work/kport" --token double-token &
pids+=($!)
wait_for "[[ -s $work/kport ]]" 10 "echo the double did not start"
KUBE=http://127.0.0.1:$(cat "$work/kport")
cat >"$work/kubeconfig" <<EOK
apiVersion: v1
kind: Config
current-context: double
clusters:
  - name: double
    cluster:
      server: $KUBE
users:
  - name: bridge
    user:
      token: double-token
contexts:
  - name: double
    context:
      cluster: double
      user: bridge
EOK
sed '/^kube_bridge:/,$d' "$SAFE_CONFIG" >"$work/safe.yaml"
cat >>"$work/safe.yaml" <<EOY
kube_bridge:
  kubernetes:
    kubeconfig: $work/kubeconfig
    namespace: team
    gpu_resource: amd.com/gpu
    checkpoint_host_path: /data/ckpt
EOY
"$bin/safe-kube-bridge" --config "$work/safe.yaml" --listen 127.0.0.1:0 --work-dir /tmp 2>"$work/bridge.log" &
pids+=($!)
wait_for "grep -q 'listening on' $work/bridge.log" 10 "cat $work/bridge.log"
URL=$(sed -n 's|.*listening on \(http://[0-9.]*:[0-9]*\).*|\1|p' "$work/bridge.log")

api() {  # api METHOD PATH [BODY] -> "STATUS BODY"; authenticated as root with munge
    local out
    local args=()
    # A POST always has a body (maybe empty): httplib answers 400 to one without Content-Length.
    [[ -n ${3:-} || $1 == POST ]] && args=(-H 'Content-Type: application/json' --data-binary "${3:-}")
    out=$(curl -sS -w '\n%{http_code}' -X "$1" -H "Authorization: Munge $(munge -n)" "${args[@]}" "$URL$2")
    echo "${out##*$'\n'} ${out%$'\n'*}"
}
expect() {  # expect STATUS METHOD PATH [BODY] -> body
    local status=$1 out
    shift
    out=$(api "$@")
    [[ ${out%% *} == "$status" ]] || fail "$1 $2: expected HTTP $status, got: $out"$'\n'"$(tail -5 "$work/bridge.log")"
    printf '%s' "${out#* }"
}
phase() { expect 200 GET "/api/v1/workloads/$1" | jq -r .phase; }
double() { curl -sS -X POST -H 'Content-Type: application/json' --data-binary "${2:-{\}}" "$KUBE/_double/$1" >/dev/null; }
objects() { curl -sS -X POST -H 'Content-Type: application/json' --data-binary "{\"kinds\":[\"$1\"]}" "$KUBE/_double/objects"; }
pod_of() { objects Pod | jq -r --arg j "$1" --arg i "$2" '.[] | select(.metadata.labels["batch.kubernetes.io/job-name"] == $j and .metadata.annotations["batch.kubernetes.io/job-completion-index"] == $i) | .metadata.name'; }
node_of() { objects Pod | jq -r --arg p "$1" '.[] | select(.metadata.name == $p) | .spec.nodeName'; }

# Create: an Indexed Job and a headless Service, pods Running, then Succeeded.
spec='{"name":"k1","target":"kubernetes","image":"rocm/pytorch:latest","command":["python","train.py"],
       "nodes":2,"gpusPerNode":4,"workspace":"ml","retries":1,"checkpoint":{"dir":"/ckpt/k1"}}'
assert_eq kube-k1 "$(expect 201 POST /api/v1/workloads "$spec" | jq -r .id)" "id"
job=$(objects Job | jq -c '.[] | select(.metadata.name == "k1-a1")')
assert_eq "Indexed 2 2 0" "$(jq -r '"\(.spec.completionMode) \(.spec.completions) \(.spec.parallelism) \(.spec.backoffLimit)"' <<<"$job")" "Job"
assert_contains "$job" '{"name":"SAFE_WORKSPACE","value":"ml"}'
assert_contains "$job" '"hostPath":{"path":"/data/ckpt","type":"DirectoryOrCreate"}'
assert_eq None "$(objects Service | jq -r '.[] | select(.metadata.name == "k1-a1") | .spec.clusterIP')" "headless Service"
wait_for "[[ \$(phase kube-k1) == Running ]]" 10 "tail -5 $work/bridge.log"
double "pods/team/$(pod_of k1-a1 0)" '{"phase":"Succeeded","exitCode":0,"log":"hello from rank 0\n"}'
double "pods/team/$(pod_of k1-a1 1)" '{"phase":"Succeeded","exitCode":0}'
wait_for "[[ \$(phase kube-k1) == Succeeded ]]" 10 "tail -5 $work/bridge.log"
assert_eq "hello from rank 0" "$(expect 200 GET /api/v1/workloads/kube-k1/logs)" "logs"

# Node fault: the node goes NotReady -> taint, Job recreated without it, attempt 2.
expect 201 POST /api/v1/workloads '{"name":"k2","target":"kubernetes","image":"i","script":"train","nodes":2,"retries":1}' >/dev/null
wait_for "[[ \$(phase kube-k2) == Running ]]" 10
bad=$(node_of "$(pod_of k2-a1 1)")
double "nodes/$bad" '{"ready":false}'
wait_for "[[ \$(expect 200 GET /api/v1/workloads/kube-k2 | jq .attempt) == 2 ]]" 10 "tail -5 $work/bridge.log"
node=$(objects Node | jq -c --arg n "$bad" '.[] | select(.metadata.name == $n)')
assert_contains "$node" '"taints":[{"key":"safe-for-slurm.io/unhealthy","value":"node_fault","effect":"NoSchedule"}]'
assert_eq "" "$(objects Job | jq -r '.[] | select(.metadata.name == "k2-a1") | .metadata.name')" "old Job deleted"
assert_contains "$(objects Job | jq -c '.[] | select(.metadata.name == "k2-a2")')" "{\"key\":\"kubernetes.io/hostname\",\"operator\":\"NotIn\",\"values\":[\"$bad\"]}"
for i in 0 1; do
    [[ $(node_of "$(pod_of k2-a2 $i)") != "$bad" ]] || fail "attempt 2 landed on the bad node $bad"
done
events=$(expect 200 GET /api/v1/workloads/kube-k2/events)
assert_contains "$events" "node_fault: node $bad is NotReady; recreating without it"
# Retries exhausted: another node fault on attempt 2 fails the workload.
bad2=$(node_of "$(pod_of k2-a2 0)")
double "nodes/$bad2" '{"ready":false}'
wait_for "[[ \$(phase kube-k2) == Failed ]]" 10 "tail -5 $work/bridge.log"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k2/events)" "retries exhausted (1)"
double "nodes/$bad" '{"ready":true}'
double "nodes/$bad2" '{"ready":true}'

# User error: exit 3 on a healthy node -> Failed, no second attempt.
curl -sS -X PATCH -H 'Content-Type: application/merge-patch+json' -H 'Authorization: Bearer double-token' \
    --data-binary '{"metadata":{"labels":{"safe-for-slurm.io/unhealthy":null}},"spec":{"taints":[]}}' "$KUBE/api/v1/nodes/$bad" >/dev/null
expect 201 POST /api/v1/workloads '{"name":"k3","target":"kubernetes","image":"i","script":"x","nodes":1,"retries":3}' >/dev/null
wait_for "[[ \$(phase kube-k3) == Running ]]" 10
double "pods/team/$(pod_of k3-a1 0)" '{"phase":"Failed","exitCode":3}'
wait_for "[[ \$(phase kube-k3) == Failed ]]" 10
assert_eq 1 "$(expect 200 GET /api/v1/workloads/kube-k3 | jq .attempt)" "attempts after a user error"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k3/events)" "user_error: pod"

# Watch reconnect: dropped connections, then a compacted history (410 Gone -> relist).
expect 201 POST /api/v1/workloads '{"name":"k4","target":"kubernetes","image":"i","script":"x","nodes":1}' >/dev/null
wait_for "[[ \$(phase kube-k4) == Running ]]" 10
double drop-watches
sleep 1
double compact
double drop-watches
sleep 1
double "pods/team/$(pod_of k4-a1 0)" '{"phase":"Succeeded","exitCode":0}'
wait_for "[[ \$(phase kube-k4) == Succeeded ]]" 10 "tail -5 $work/bridge.log"

# Listing, filters, nodes, stop, and a duplicate name.
assert_eq "kube-k1 kube-k2 kube-k3 kube-k4" "$(expect 200 GET '/api/v1/workloads?target=kubernetes' | jq -r '[.items[].id] | join(" ")')" "kube list"
assert_eq "kube-k2 kube-k3" "$(expect 200 GET '/api/v1/workloads?target=kubernetes&state=Failed' | jq -r '[.items[].id] | join(" ")')" "failed"
assert_contains "$(expect 200 GET /api/v1/nodes | jq -c '[.items[] | select(.target == "kubernetes") | .name]')" '"k1","k2","k3"'
expect 409 POST /api/v1/workloads '{"name":"k4","target":"kubernetes","image":"i","script":"x"}' >/dev/null
expect 201 POST /api/v1/workloads '{"name":"k5","target":"kubernetes","image":"i","script":"x"}' >/dev/null
expect 202 POST /api/v1/workloads/kube-k5/stop >/dev/null
assert_eq Stopped "$(phase kube-k5)" "stopped"
assert_eq "" "$(objects Job | jq -r '.[] | select(.metadata.name == "k5-a1") | .metadata.name')" "stopped Job deleted"

# The health agent's call: safe-kube-node marks and clears a node; SaFE's Jobs avoid marked nodes.
for n in k1 k2 k3; do "$bin/safe-kube-node" clear "$n" --kubeconfig "$work/kubeconfig" >/dev/null; done
assert_eq "[]" "$(objects Node | jq -c '[.[] | select(.metadata.labels["safe-for-slurm.io/unhealthy"])]')" "marks after clear"
"$bin/safe-kube-node" mark k3 --reason gpu_fault --kubeconfig "$work/kubeconfig" >/dev/null
node=$(objects Node | jq -c '.[] | select(.metadata.name == "k3")')
assert_contains "$node" '"safe-for-slurm.io/unhealthy":"gpu_fault"'
assert_contains "$node" '{"key":"safe-for-slurm.io/unhealthy","value":"gpu_fault","effect":"NoSchedule"}'
expect 201 POST /api/v1/workloads '{"name":"k6","target":"kubernetes","image":"i","script":"x","nodes":2}' >/dev/null
for i in 0 1; do
    [[ $(node_of "$(pod_of k6-a1 $i)") != k3 ]] || fail "a pod of k6 landed on k3, which SaFE marked unhealthy"
done
assert_contains "$(expect 200 GET /api/v1/nodes | jq -c '.items[] | select(.name == "k3")')" '"health":"unhealthy","safeDrained":true'
expect_failure "safe-kube-node: cannot read node nope: HTTP 404" "$bin/safe-kube-node" mark nope --kubeconfig "$work/kubeconfig"

# The health agent itself: safe-healthcheck --kube marks its Kubernetes node on a critical GPU
# fault (simulated GPUs) and clears the mark once the node has recovered, through safe-kube-node.
cat >"$work/agent.yaml" <<YAML
health:
  backend: sim
  sim_dir: $work/sim
  state_dir: $work/agent-state
  pass_runs_before_resume: 1
  disabled_checks: [kmsg_critical, kmsg_warning]
YAML
mark_of_k1() { objects Node | jq -r '.[] | select(.metadata.name == "k1") | .metadata.labels["safe-for-slurm.io/unhealthy"] // "none"'; }
SAFE_CONFIG=$work/agent.yaml "$bin/safectl" inject --node k1 --gpu 0 --fault ecc >/dev/null
set +e
KUBECONFIG=$work/kubeconfig "$bin/safe-healthcheck" --kube --node k1 --config "$work/agent.yaml" >"$work/agent.out" 2>&1
rc=$?
set -e
assert_eq 1 "$rc" "safe-healthcheck --kube exit code on a critical fault ($(cat "$work/agent.out"))"
[[ $(mark_of_k1) != none ]] || fail "safe-healthcheck --kube did not mark k1: $(cat "$work/agent.out")"
SAFE_CONFIG=$work/agent.yaml "$bin/safectl" inject --node k1 --gpu 0 --fault clear >/dev/null
KUBECONFIG=$work/kubeconfig "$bin/safe-healthcheck" --kube --node k1 --config "$work/agent.yaml" >/dev/null ||
    fail "safe-healthcheck --kube failed on a healthy node"
assert_eq none "$(mark_of_k1)" "k1's mark after recovery"
echo "bridge_kube: ok"
