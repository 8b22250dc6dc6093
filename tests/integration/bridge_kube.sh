#!/usr/bin/env bash
# bridge_kube.sh DIR: the bridge's Kubernetes target against the Kubernetes API double
# (tests/kube/kube_api_double.py; no real API server can run here), with a second bridge started
# for it beside the cluster at DIR: create -> Running -> Succeeded; a node fault fails over
# (node tainted, the old attempt's pods stopped with the checkpoint signal's grace period first,
# Job recreated without the node, attempt 2); an infrastructure exit code is retried without
# blaming a node; a user error fails without retry; retries exhausted; an eviction
# (DisruptionTarget) fails over, a preemption does not; the Job's deadline ends it as timeout;
# the watches survive dropped connections and a compacted history (410 Gone); a restarted bridge
# still has every workload (rebuilt from the records on their Jobs), finishes a failover it had
# begun and fails over after the restart; a hangTimeout fails a silent workload over as a hang.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source=../lib/kube_double.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/kube_double.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
kube_test_dirs safe-kube

start_kube_double
kube_user_config
kube_uid=$(id -u safe-kube) kube_gid=$(id -g safe-kube)
cat >>"$work/safe.yaml" <<EOY
kube_bridge:
  kubernetes:
    kubeconfig: $work/kubeconfig
    namespace: team
    gpu_resource: amd.com/gpu
    checkpoint_host_path: /data/ckpt
EOY
nbridge=0
start_bridge() {  # a bridge on a free port, logging to LOG; URL is where it listens
    nbridge=$((nbridge + 1))
    LOG=$work/bridge$nbridge.log
    "$bin/safe-kube-bridge" --config "$work/safe.yaml" --listen 127.0.0.1:0 2>"$LOG" &
    bridge_pid=$!
    pids+=("$bridge_pid")
    wait_for "grep -q 'listening on' $LOG && grep -q 'recovered from their Jobs' $LOG" 15 "cat $LOG"
    URL=$(sed -n 's|.*listening on \(http://[0-9.]*:[0-9]*\).*|\1|p' "$LOG")
}
stop_bridge() {  # SIGTERM: the bridge stops its watches (idle in libcurl), joins its threads, exits 0
    local t0 rc=0
    t0=$(date +%s%3N)
    kill "$bridge_pid"
    wait "$bridge_pid" 2>/dev/null || rc=$?
    assert_eq 0 "$rc" "exit status of the bridge after SIGTERM"
    (($(date +%s%3N) - t0 < 10000)) || fail "the bridge took $(($(date +%s%3N) - t0)) ms to stop after SIGTERM"
}
start_bridge

api() {  # api METHOD PATH [BODY] -> "STATUS BODY"; authenticated as safe-kube (or $AS) with munge
    local out
    local args=()
    [[ -n ${3:-} || $1 == POST ]] && args=(-H 'Content-Type: application/json' --data-binary "${3:-}")
    out=$(curl -sS -w '\n%{http_code}' -X "$1" -H "Authorization: Munge $(runuser -u "${AS:-safe-kube}" -- munge -n)" \
        "${args[@]}" "$URL$2")
    echo "${out##*$'\n'} ${out%$'\n'*}"
}
expect() {  # expect STATUS METHOD PATH [BODY] -> body
    local status=$1 out
    shift
    out=$(api "$@")
    [[ ${out%% *} == "$status" ]] || fail "$1 $2: expected HTTP $status, got: $out"$'\n'"$(tail -5 "$LOG")"
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
refused=$(AS=root expect 403 POST /api/v1/workloads "$spec")
assert_contains "$refused" "workloads on Kubernetes never run as root"
assert_eq kube-k1 "$(expect 201 POST /api/v1/workloads "$spec" | jq -r .id)" "id"
job=$(objects Job | jq -c '.[] | select(.metadata.name == "k1-a1")')
# As its user, on its own directory of the checkpoint volume (made by the admin's init image).
assert_eq "$kube_uid $kube_gid true" "$(jq -r '.spec.template.spec.securityContext | "\(.runAsUser) \(.runAsGroup) \(.runAsNonRoot)"' <<<"$job")" "pod securityContext"
assert_eq "ml/safe-kube/k1" "$(jq -r '.spec.template.spec.containers[0].volumeMounts[0].subPath' <<<"$job")" "checkpoint subPath"
assert_eq "ml/safe-kube/k1 $kube_uid $kube_gid" "$(jq -r '.spec.template.spec.initContainers[0].command[4:] | join(" ")' <<<"$job")" "init container"
assert_eq "Indexed 2 2 0" "$(jq -r '"\(.spec.completionMode) \(.spec.completions) \(.spec.parallelism) \(.spec.backoffLimit)"' <<<"$job")" "Job"
assert_contains "$job" '{"name":"SAFE_WORKSPACE","value":"ml"}'
assert_contains "$job" '"hostPath":{"path":"/data/ckpt","type":"DirectoryOrCreate"}'
assert_eq None "$(objects Service | jq -r '.[] | select(.metadata.name == "k1-a1") | .spec.clusterIP')" "headless Service"
# The entrypoint in front of the command; the checkpoint signal's lead time as the grace period.
assert_eq '/bin/sh safe-entrypoint python train.py' "$(jq -r '.spec.template.spec.containers[0].command | [.[0], .[3], .[4], .[5]] | join(" ")' <<<"$job")" "command"
lead=$(jq -r '.spec.template.spec.containers[0].env[] | select(.name == "SAFE_CKPT_SIGNAL") | .value | sub(".*@"; "")' <<<"$job")
assert_eq "$lead" "$(jq -r .spec.template.spec.terminationGracePeriodSeconds <<<"$job")" "terminationGracePeriodSeconds"
assert_eq '"k1"' "$(jq -c '.metadata.annotations["safe-for-slurm.io/record"] | fromjson | .spec.name' <<<"$job")" "record on the Job"
wait_for "[[ \$(phase kube-k1) == Running ]]" 10 "tail -5 $LOG"
double "pods/team/$(pod_of k1-a1 0)" '{"phase":"Succeeded","exitCode":0,"log":"hello from rank 0\n"}'
double "pods/team/$(pod_of k1-a1 1)" '{"phase":"Succeeded","exitCode":0}'
wait_for "[[ \$(phase kube-k1) == Succeeded ]]" 10 "tail -5 $LOG"
assert_eq "hello from rank 0" "$(expect 200 GET /api/v1/workloads/kube-k1/logs)" "logs"

# Node fault: the node goes NotReady -> taint; the attempt's Job is suspended, so its pods get
# SIGTERM (the entrypoint's cue for the checkpoint signal) with the lead time as grace period; the
# pod on the healthy node stops, the one on the dead node never confirms, so attempt 2 (without
# the node) starts when the lead time is over; then the old Job is deleted with its pods.
expect 201 POST /api/v1/workloads '{"name":"k2","target":"kubernetes","image":"i","script":"train","nodes":2,"retries":1,
    "checkpoint":{"dir":"/ckpt/k2","signal":"USR1","graceSeconds":3}}' >/dev/null
wait_for "[[ \$(phase kube-k2) == Running ]]" 10
bad=$(node_of "$(pod_of k2-a1 1)")
good_pod=$(pod_of k2-a1 0) bad_pod=$(pod_of k2-a1 1)
double "nodes/$bad" '{"ready":false}'
wait_for "[[ \$(expect 200 GET /api/v1/workloads/kube-k2 | jq .attempt) == 2 ]]" 10 "tail -5 $LOG"
node=$(objects Node | jq -c --arg n "$bad" '.[] | select(.metadata.name == $n)')
assert_contains "$node" '"taints":[{"key":"safe-for-slurm.io/unhealthy","value":"node_fault","effect":"NoSchedule"}]'
wait_for "objects Job | jq -e '.[] | select(.metadata.name == \"k2-a2\")'" 10 "tail -5 $LOG"
deletions=$(curl -sS -X POST "$KUBE/_double/deletions")
for p in "$good_pod" "$bad_pod"; do
    assert_eq "job-controller 3 3" "$(jq -r --arg p "$p" '.[] | select(.name == $p) | "\(.by) \(.gracePeriodSeconds) \(.terminationGracePeriodSeconds)"' <<<"$deletions" | head -1)" "deletion of $p"
done
assert_eq "Background" "$(jq -r '.[] | select(.kind == "Job" and .name == "k2-a1") | .propagationPolicy' <<<"$deletions")" "old Job's propagationPolicy"
history=$(curl -sS -X POST "$KUBE/_double/history")
rv() { jq -r --arg k "$1" --arg t "$2" --arg n "$3" '[.[] | select(.kind == $k and .type == $t and .name == $n) | .rv] | first // 0' <<<"$history"; }
created=$(rv Job ADDED k2-a2)
(($(rv Pod DELETED "$good_pod") > 0 && $(rv Pod DELETED "$good_pod") < created)) ||
    fail "attempt 2 was created before the pod on the healthy node had stopped"
(($(rv Pod DELETED "$bad_pod") == 0)) || fail "the pod on the NotReady node was removed without its kubelet"
[[ $(objects Pod | jq -r --arg p "$bad_pod" '.[] | select(.metadata.name == $p) | .metadata.deletionGracePeriodSeconds') == 3 ]] ||
    fail "the pod on the NotReady node is not Terminating with a grace period of 3 s"
wait_for "[[ -z \$(objects Job | jq -r '.[] | select(.metadata.name == \"k2-a1\") | .metadata.name') ]]" 10 "echo old Job still there"
assert_contains "$(objects Job | jq -c '.[] | select(.metadata.name == "k2-a2")')" "{\"key\":\"kubernetes.io/hostname\",\"operator\":\"NotIn\",\"values\":[\"$bad\"]}"
for i in 0 1; do
    [[ $(node_of "$(pod_of k2-a2 $i)") != "$bad" ]] || fail "attempt 2 landed on the bad node $bad"
done
events=$(expect 200 GET /api/v1/workloads/kube-k2/events)
assert_contains "$events" "node_fault (node fault during the job): $bad NotReady (pod $bad_pod)"
# Retries exhausted: another node fault on attempt 2 fails the workload.
bad2=$(node_of "$(pod_of k2-a2 0)")
double "nodes/$bad2" '{"ready":false}'
wait_for "[[ \$(phase kube-k2) == Failed ]]" 10 "tail -5 $LOG"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k2/events)" "not retried: retries exhausted (1/1)"
assert_eq true "$(objects Job | jq -r '.[] | select(.metadata.name == "k2-a2") | .spec.suspend')" "the last attempt's Job suspended (its pods stopped)"
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
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k3/events)" "user_error (failed on healthy nodes): exit code 3, no node fault seen; not retried"

# An infrastructure exit code (failover.infra_exit_codes: 75) is retried, without blaming the node.
expect 201 POST /api/v1/workloads '{"name":"k8","target":"kubernetes","image":"i","script":"x","nodes":1,"retries":1,
    "checkpoint":{"signal":"USR1","graceSeconds":1}}' >/dev/null
wait_for "[[ \$(phase kube-k8) == Running ]]" 10
node8=$(node_of "$(pod_of k8-a1 0)")
double "pods/team/$(pod_of k8-a1 0)" '{"phase":"Failed","exitCode":75}'
wait_for "[[ \$(expect 200 GET /api/v1/workloads/kube-k8 | jq .attempt) == 2 ]]" 10 "tail -5 $LOG"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k8/events)" "infra_transient (exit code configured as infrastructure): exit code 75"
assert_eq null "$(objects Node | jq -c --arg n "$node8" '.[] | select(.metadata.name == $n) | .metadata.labels["safe-for-slurm.io/unhealthy"]')" "no node blamed"
assert_eq "" "$(expect 200 GET /api/v1/workloads/kube-k8 | jq -r .excludedNodes)" "no node excluded"
wait_for "[[ -n \$(pod_of k8-a2 0) ]]" 10 "tail -5 $LOG"
double "pods/team/$(pod_of k8-a2 0)" '{"phase":"Succeeded","exitCode":0}'
wait_for "[[ \$(phase kube-k8) == Succeeded ]]" 10 "tail -5 $LOG"

# Watch reconnect: dropped connections, then a compacted history (410 Gone -> relist).
expect 201 POST /api/v1/workloads '{"name":"k4","target":"kubernetes","image":"i","script":"x","nodes":1}' >/dev/null
wait_for "[[ \$(phase kube-k4) == Running ]]" 10
double drop-watches
sleep 1
double compact
double drop-watches
sleep 1
double "pods/team/$(pod_of k4-a1 0)" '{"phase":"Succeeded","exitCode":0}'
wait_for "[[ \$(phase kube-k4) == Succeeded ]]" 10 "tail -5 $LOG"

# Listing, filters, nodes, stop, and a duplicate name.
assert_eq "kube-k1 kube-k2 kube-k3 kube-k4 kube-k8" "$(expect 200 GET '/api/v1/workloads?target=kubernetes' | jq -r '[.items[].id] | join(" ")')" "kube list"
assert_eq "kube-k2 kube-k3" "$(expect 200 GET '/api/v1/workloads?target=kubernetes&state=Failed' | jq -r '[.items[].id] | join(" ")')" "failed"
assert_contains "$(expect 200 GET /api/v1/nodes | jq -c '[.items[] | select(.target == "kubernetes") | .name]')" '"k1","k2","k3"'
expect 409 POST /api/v1/workloads '{"name":"k4","target":"kubernetes","image":"i","script":"x"}' >/dev/null
# Nodes the API server will not list: the call fails (503), never half a list.
double refuse '{"method":"GET","kind":"Node"}'
expect 503 GET /api/v1/nodes >/dev/null
double refuse
expect 201 POST /api/v1/workloads '{"name":"k5","target":"kubernetes","image":"i","script":"x"}' >/dev/null
# An API server that refuses the suspension: the stop fails (502), and the workload runs on.
double refuse '{"method":"PATCH","kind":"Job"}'
expect 502 POST /api/v1/workloads/kube-k5/stop >/dev/null
double refuse
[[ $(phase kube-k5) != Stopped ]] || fail "kube-k5 reads Stopped though its Job was never suspended"
assert_eq null "$(objects Job | jq -r '.[] | select(.metadata.name == "k5-a1") | .spec.suspend')" "Job of a refused stop"
# The suspension is made but its answer is lost: the bridge reads the Job back, and it is Stopped.
double refuse '{"method":"PATCH","kind":"Job","apply":true}'
expect 202 POST /api/v1/workloads/kube-k5/stop >/dev/null
double refuse
assert_eq Stopped "$(phase kube-k5)" "stopped"
assert_eq true "$(objects Job | jq -r '.[] | select(.metadata.name == "k5-a1") | .spec.suspend')" "stopped Job suspended"
wait_for "[[ -z \$(pod_of k5-a1 0) ]]" 10 "echo the stopped workload's pod is still there"

# DisruptionTarget on a pod: the scheduler's preemption is a preemption, as on Slurm (not in the
# default retry classes); an eviction takes the node away (node_fault, failover without it).
expect 201 POST /api/v1/workloads '{"name":"k12","target":"kubernetes","image":"i","script":"x","nodes":1,"retries":1}' >/dev/null
wait_for "[[ \$(phase kube-k12) == Running ]]" 10
double "pods/team/$(pod_of k12-a1 0)" '{"phase":"Failed","exitCode":143,"conditions":[{"type":"DisruptionTarget","status":"True","reason":"PreemptionByScheduler"}]}'
wait_for "[[ \$(phase kube-k12) == Failed ]]" 10 "tail -5 $LOG"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k12/events)" "preempted (preempted by the scheduler): job state PREEMPTED; not retried: preempted is not in failover.retry_classes"
expect 201 POST /api/v1/workloads '{"name":"k11","target":"kubernetes","image":"i","script":"x","nodes":1,"retries":1,
    "checkpoint":{"signal":"USR1","graceSeconds":1}}' >/dev/null
wait_for "[[ \$(phase kube-k11) == Running ]]" 10
pod11=$(pod_of k11-a1 0) node11=$(node_of "$(pod_of k11-a1 0)")
double "pods/team/$pod11" '{"phase":"Running","conditions":[{"type":"DisruptionTarget","status":"True","reason":"EvictionByEvictionAPI"}]}'
wait_for "[[ \$(expect 200 GET /api/v1/workloads/kube-k11 | jq .attempt) == 2 ]]" 10 "tail -5 $LOG"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k11/events)" "node_fault (node fault during the job): $node11 pod $pod11 DisruptionTarget (EvictionByEvictionAPI)"
assert_eq "$node11" "$(expect 200 GET /api/v1/workloads/kube-k11 | jq -r .excludedNodes)" "k11 excludes the evicted pod's node"
wait_for "[[ -n \$(pod_of k11-a2 0) ]]" 10 "tail -5 $LOG"
double "pods/team/$(pod_of k11-a2 0)" '{"phase":"Succeeded","exitCode":0}'
wait_for "[[ \$(phase kube-k11) == Succeeded ]]" 10 "tail -5 $LOG"
"$bin/safe-kube-node" clear "$node11" --kubeconfig "$work/kubeconfig" >/dev/null

# The Job's deadline (timeLimit -> activeDeadlineSeconds) passes: the Job controller stops the
# pods (gracefully: the checkpoint signal) and the workload ends as timeout, not retried.
expect 201 POST /api/v1/workloads '{"name":"k10","target":"kubernetes","image":"i","script":"x","nodes":1,"retries":2,
    "timeLimit":1,"checkpoint":{"signal":"USR1","graceSeconds":1}}' >/dev/null
wait_for "[[ \$(phase kube-k10) == Running ]]" 10
pod10=$(pod_of k10-a1 0)
double "jobs/team/k10-a1" '{"deadlineExceeded":true}'
wait_for "[[ \$(phase kube-k10) == Failed ]]" 10 "tail -5 $LOG"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k10/events)" "timeout (reached its time limit): job state TIMEOUT; not retried"
assert_eq "job-controller 1" "$(curl -sS -X POST "$KUBE/_double/deletions" | jq -r --arg p "$pod10" '.[] | select(.name == $p) | "\(.by) \(.gracePeriodSeconds)"' | head -1)" "deadline stop"
assert_eq 1 "$(expect 200 GET /api/v1/workloads/kube-k10 | jq .attempt)" "attempts after a timeout"

# A restarted bridge has every workload back from the records on their Jobs, finishes a failover
# it had begun (the old pod is stuck on a NotReady node) and fails over after the restart.
for n in k1 k2 k3; do "$bin/safe-kube-node" clear "$n" --kubeconfig "$work/kubeconfig" >/dev/null; done
for n in k1 k2 k3; do double "nodes/$n" '{"ready":true}'; done
expect 201 POST /api/v1/workloads '{"name":"k7","target":"kubernetes","image":"i","script":"x","nodes":2,"retries":2,
    "checkpoint":{"signal":"USR1","graceSeconds":8}}' >/dev/null
expect 201 POST /api/v1/workloads '{"name":"k9","target":"kubernetes","image":"i","script":"x","nodes":1,"retries":1,
    "checkpoint":{"signal":"USR1","graceSeconds":2}}' >/dev/null
wait_for "[[ \$(phase kube-k7) == Running && \$(phase kube-k9) == Running ]]" 10
bad7=$(node_of "$(pod_of k7-a1 0)")
[[ $bad7 != "$(node_of "$(pod_of k9-a1 0)")" ]] || bad7=$(node_of "$(pod_of k7-a1 1)")
double "nodes/$bad7" '{"ready":false}'
wait_for "[[ \$(expect 200 GET /api/v1/workloads/kube-k7 | jq .attempt) == 2 ]]" 10 "tail -5 $LOG"
# k7's phase may move on once its lead time is over, so it is compared without it.
view() { expect 200 GET '/api/v1/workloads?target=kubernetes' | jq -S '[.items[] | del(.nodes) | if .id == "kube-k7" then del(.phase) else . end]'; }
kube_events() { for w in k1 k2 k3 k4 k5 k8 k9 k10; do expect 200 GET "/api/v1/workloads/kube-$w/events"; done; }
before=$(view) events_before=$(kube_events)
stop_bridge  # while attempt 2 of k7 waits for the lead time
assert_eq "" "$(objects Job | jq -r '.[] | select(.metadata.name == "k7-a2") | .metadata.name')" "attempt 2 not created yet"
start_bridge
assert_eq "$before" "$(view)" "workloads after the restart"
assert_eq "$events_before" "$(kube_events)" "events after the restart"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-k7/events)" "node_fault (node fault during the job): $bad7 NotReady"
wait_for "objects Job | jq -e '.[] | select(.metadata.name == \"k7-a2\")'" 15 "tail -5 $LOG"
wait_for "[[ \$(phase kube-k7) == Running ]]" 10 "tail -5 $LOG"
double "nodes/$bad7" '{"ready":true}'
# A node fault after the restart still fails over.
bad9=$(node_of "$(pod_of k9-a1 0)")
double "nodes/$bad9" '{"ready":false}'
wait_for "[[ \$(expect 200 GET /api/v1/workloads/kube-k9 | jq .attempt) == 2 ]]" 10 "tail -5 $LOG"
events=$(expect 200 GET /api/v1/workloads/kube-k9/events)
assert_contains "$events" "node_fault (node fault during the job): "
assert_contains "$events" "$bad9 NotReady (pod $(pod_of k9-a1 0))"
double "nodes/$bad9" '{"ready":true}'
# Deleting a workload deletes its Jobs: a restarted bridge no longer has it.
expect 200 DELETE /api/v1/workloads/kube-k5 >/dev/null
stop_bridge
start_bridge
expect 404 GET /api/v1/workloads/kube-k5 >/dev/null
assert_eq Succeeded "$(phase kube-k1)" "k1 after a second restart"
for w in k7 k9; do expect 202 POST "/api/v1/workloads/kube-$w/stop" >/dev/null; done

# Hang detection (hangTimeout): a workload whose pods' log stops growing fails over as a hang
# (infra_transient, no node blamed), and once more when retries are exhausted; one where a single
# pod keeps writing runs on.
for n in k1 k2 k3; do "$bin/safe-kube-node" clear "$n" --kubeconfig "$work/kubeconfig" >/dev/null; done
expect 201 POST /api/v1/workloads '{"name":"kh1","target":"kubernetes","image":"i","script":"x","nodes":1,"retries":1,
    "hangTimeout":4,"checkpoint":{"signal":"USR1","graceSeconds":1}}' >/dev/null
expect 201 POST /api/v1/workloads '{"name":"kh2","target":"kubernetes","image":"i","script":"x","nodes":2,"retries":1,
    "hangTimeout":4,"checkpoint":{"signal":"USR1","graceSeconds":1}}' >/dev/null
wait_for "[[ \$(phase kube-kh1) == Running && \$(phase kube-kh2) == Running ]]" 10 "tail -5 $LOG"
hung_pod=$(pod_of kh1-a1 0) hung_node=$(node_of "$(pod_of kh1-a1 0)") busy_pod=$(pod_of kh2-a1 0)
double "pods/team/$hung_pod" '{"phase":"Running","log":"step 1\n"}'  # then nothing more
written=""
for step in $(seq 1 12); do  # 12 s: three times kh2's hangTimeout
    written+="step $step\n"
    double "pods/team/$busy_pod" "{\"phase\":\"Running\",\"log\":\"$written\"}" ||
        fail "kh2's pod $busy_pod is gone after $step s although its log grows: $(expect 200 GET /api/v1/workloads/kube-kh2/events)"
    sleep 1
done
assert_eq "1 Running" "$(expect 200 GET /api/v1/workloads/kube-kh2 | jq -r '"\(.attempt) \(.phase)"')" "kh2 (log growing) attempt and phase"
assert_eq "" "$(expect 200 GET /api/v1/workloads/kube-kh2/events | jq -r '.items[] | select(.type == "Failover") | .message')" "kh2 failovers"
events=$(expect 200 GET /api/v1/workloads/kube-kh1/events)
assert_contains "$events" "infra_transient (no progress for its hang timeout): hang: no pod log output for "
assert_contains "$events" "(hangTimeout=4; silent: $hung_pod "
wait_for "[[ \$(phase kube-kh1) == Failed ]]" 15 "tail -5 $LOG"
assert_eq 2 "$(expect 200 GET /api/v1/workloads/kube-kh1 | jq .attempt)" "kh1 attempts"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-kh1/events)" "hang: no pod log output for"
assert_contains "$(expect 200 GET /api/v1/workloads/kube-kh1/events)" "not retried: retries exhausted (1/1)"
assert_eq "job-controller" "$(curl -sS -X POST "$KUBE/_double/deletions" | jq -r --arg p "$hung_pod" '.[] | select(.name == $p) | .by' | head -1)" "hung pod stopped by suspending its Job"
assert_eq "" "$(expect 200 GET /api/v1/workloads/kube-kh1 | jq -r .excludedNodes)" "no node excluded after a hang"
assert_eq null "$(objects Node | jq -c --arg n "$hung_node" '.[] | select(.metadata.name == $n) | .metadata.labels["safe-for-slurm.io/unhealthy"]')" "no node blamed for a hang"
# The double's pods/log options, as the API server checks them.
log_url="$KUBE/api/v1/namespaces/team/pods/$busy_pod/log"
double "pods/team/$busy_pod" "{\"phase\":\"Running\",\"log\":\"${written}step 13\\n\"}"
assert_eq "s" "$(curl -sS -H 'Authorization: Bearer double-token' "$log_url?sinceSeconds=3&limitBytes=1")" "log written in the last 3 s, 1 byte"
sleep 2
assert_eq "" "$(curl -sS -H 'Authorization: Bearer double-token' "$log_url?sinceSeconds=1")" "log written in the last second"
assert_eq 422 "$(curl -sS -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer double-token' "$log_url?sinceSeconds=0")" "sinceSeconds=0"
expect 202 POST /api/v1/workloads/kube-kh2/stop >/dev/null

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
