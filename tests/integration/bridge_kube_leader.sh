#!/usr/bin/env bash
# bridge_kube_leader.sh DIR: two bridges with the Kubernetes target against the Kubernetes API
# double (tests/kube/kube_api_double.py; no real API server can run here), elected with a
# coordination.k8s.io/v1 Lease (kubernetes.leader_election: duration 4 s, renew deadline 3 s,
# retry 1 s), beside the cluster at DIR (its munge and users):
#  - the first leads: it creates workloads; the second stands by, serves reads of them and answers
#    creates with 503 naming the leader;
#  - the leader is killed (SIGKILL) in the middle of a failover (attempt 1's Job suspended, the
#    lead time running): the second takes the Lease over after the lease duration, recovers and
#    finishes that failover; the killed one, started again, stands by;
#  - the leader stopped with SIGTERM gives the Lease up: the other takes over at its next try;
#  - a leader stalled (SIGSTOP) past the lease duration is replaced, and the workload failed over
#    by the other; continued once the other gave the Lease up, it leads again but first recovers:
#    it acts on nothing it knew from before;
#  - no Job was ever created twice (the double's full history).
# Prints both takeover times.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source=../lib/kube_double.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/kube_double.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
kube_test_dirs safe-kubel

start_kube_double --nodes k1,k2,k3,k4
kube_user_config
cat >>"$work/safe.yaml" <<EOY
kube_bridge:
  kubernetes:
    kubeconfig: $work/kubeconfig
    namespace: team
    checkpoint_host_path: /data/ckpt
    leader_election:
      lease: safe-kube-bridge
      lease_duration_s: 4
      renew_deadline_s: 3
      retry_period_s: 1
EOY

declare -A bridge_pid=() bridge_url=() bridge_log=()
nstarted=0
start_bridge() {  # start_bridge NAME: a bridge on a free port, its log in $work/NAME-K.log (K-th start)
    nstarted=$((nstarted + 1))
    local log=$work/$1-$nstarted.log
    "$bin/safe-kube-bridge" --config "$work/safe.yaml" --listen 127.0.0.1:0 2>"$log" &
    bridge_pid[$1]=$!
    pids+=("${bridge_pid[$1]}")
    bridge_log[$1]=$log
    wait_for "grep -q 'listening on' $log && grep -q 'leader election on Lease team/safe-kube-bridge' $log" 15 "cat $log"
    bridge_url[$1]=$(sed -n 's|.*listening on \(http://[0-9.]*:[0-9]*\).*|\1|p' "$log")
}
identity_of() { sed -n 's/.*leader election on Lease team\/safe-kube-bridge as \(.*\)$/\1/p' "${bridge_log[$1]}"; }
api() {  # api BRIDGE METHOD PATH [BODY] -> "STATUS BODY", as safe-kube (munge)
    local out args=()
    [[ -n ${4:-} ]] && args=(-H 'Content-Type: application/json' --data-binary "$4")
    out=$(curl -sS -w '\n%{http_code}' -X "$2" -H "Authorization: Munge $(runuser -u safe-kube -- munge -n)" \
        ${args[@]+"${args[@]}"} "${bridge_url[$1]}$3")
    echo "${out##*$'\n'} ${out%$'\n'*}"
}
expect() {  # expect STATUS BRIDGE METHOD PATH [BODY] -> body
    local status=$1 out
    shift
    out=$(api "$@")
    [[ ${out%% *} == "$status" ]] || fail "$2 $3 on $1: expected HTTP $status, got: $out"$'\n'"$(tail -5 "${bridge_log[$1]}")"
    printf '%s' "${out#* }"
}
attempt_on() { expect 200 "$1" GET /api/v1/workloads/kube-w | jq -r '"\(.attempt) \(.phase)"'; }
double() { curl -sS -X POST -H 'Content-Type: application/json' --data-binary "${2:-{\}}" "$KUBE/_double/$1" >/dev/null; }
objects() { curl -sS -X POST -H 'Content-Type: application/json' --data-binary "{\"kinds\":[\"$1\"]}" "$KUBE/_double/objects"; }
holder() { objects Lease | jq -r '.[0].spec.holderIdentity // ""'; }
node_of_pod() { objects Pod | jq -r --arg j "$1" --arg i "$2" '.[] | select(.metadata.labels["batch.kubernetes.io/job-name"] == $j and .metadata.annotations["batch.kubernetes.io/job-completion-index"] == $i) | .spec.nodeName'; }

start_bridge a
# It leads, then recovers (none yet) before it takes creates.
wait_for "grep -q 'workload(s) recovered from their Jobs' ${bridge_log[a]}" 10 "cat ${bridge_log[a]}"
start_bridge b
wait_for "grep -q 'standing by; the leader is $(identity_of a)' ${bridge_log[b]}" 10 "cat ${bridge_log[b]}"
assert_eq "$(identity_of a)" "$(holder)" "the Lease's holder"

spec='{"name":"w","target":"kubernetes","image":"i","script":"train","nodes":2,"retries":3,"workspace":"ml",
       "checkpoint":{"dir":"/ckpt/w","signal":"USR1","graceSeconds":8}}'
refused=$(expect 503 b POST /api/v1/workloads "$spec")
assert_contains "$refused" "stands by; the leader is $(identity_of a) (Lease team/safe-kube-bridge)"
expect 201 a POST /api/v1/workloads "$spec" >/dev/null
wait_for "[[ \$(attempt_on a) == '1 Running' ]]" 10 "tail -5 ${bridge_log[a]}"
# The standby reads the leader's records: the workload shows there too; a stop waits for the leader.
wait_for "[[ \$(attempt_on b) == '1 Running' ]]" 10 "tail -5 ${bridge_log[b]}"
assert_contains "$(expect 503 b POST /api/v1/workloads/kube-w/stop)" "stands by; the leader is $(identity_of a)"

# A node fault: the leader suspends attempt 1's Job and waits up to the lead time (8 s) for the
# pod on the dead node, which never confirms. Killed meanwhile, it never creates attempt 2.
bad=$(node_of_pod w-a1 1)
double "nodes/$bad" '{"ready":false}'
wait_for "[[ \$(objects Job | jq -r '.[] | select(.metadata.name == \"w-a1\") | .spec.suspend') == true ]]" 10 "tail -5 ${bridge_log[a]}"
kill -KILL "${bridge_pid[a]}"
killed=$(now_ms)
[[ -z $(objects Job | jq -r '.[] | select(.metadata.name == "w-a2") | .metadata.name') ]] || fail "attempt 2 exists before the kill"
wait_for "grep -q 'leading (Lease team/safe-kube-bridge)' ${bridge_log[b]}" 15 "tail -5 ${bridge_log[b]}"
takeover_kill=$(($(now_ms) - killed))
assert_eq "$(identity_of b)" "$(holder)" "the Lease's holder after the kill"
# The new leader recovered the failover from the record and finishes it when the lead time is over.
wait_for "[[ \$(attempt_on b) == '2 Running' ]]" 40 "tail -5 ${bridge_log[b]}"
[[ $(node_of_pod w-a2 0) != "$bad" && $(node_of_pod w-a2 1) != "$bad" ]] || fail "attempt 2 landed on the dead node $bad"
double "nodes/$bad" '{"ready":true}'

# Who acted (each bridge logs its failovers and the attempts it creates): the first leader began
# the failover, the standby did nothing until it led, then created attempt 2, once.
first_leader_log=${bridge_log[a]}
assert_eq 1 "$(grep -c 'workload w: failover: ' "$first_leader_log")" "failovers the first leader began"
assert_eq 0 "$(grep -c 'workload w: attempt' "$first_leader_log")" "attempts the first leader created"
assert_eq 0 "$(sed '/leading (Lease/,$d' "${bridge_log[b]}" | grep -c 'workload w: ')" "actions of the standby before it led"
assert_eq 1 "$(grep -c 'workload w: attempt 2 created' "${bridge_log[b]}")" "attempt 2 created by the new leader"

# The killed bridge, started again, stands by.
start_bridge a
wait_for "grep -q 'standing by; the leader is $(identity_of b)' ${bridge_log[a]}" 10 "tail -5 ${bridge_log[a]}"

# SIGTERM: the leader gives the Lease up as it stops; the other takes it at its next try.
kill -TERM "${bridge_pid[b]}"
stopped=$(now_ms)
wait "${bridge_pid[b]}" || fail "the leading bridge did not exit 0 on SIGTERM"
wait_for "grep -q 'leading (Lease team/safe-kube-bridge)' ${bridge_log[a]}" 10 "tail -5 ${bridge_log[a]}"
takeover_release=$(($(now_ms) - stopped))
((takeover_release < 4000)) || fail "the Lease was taken over $takeover_release ms after the leader released it (the lease duration is 4 s)"
bad=$(node_of_pod w-a2 0)
double "nodes/$bad" '{"ready":false}'
wait_for "[[ \$(attempt_on a) == '3 Running' ]]" 40 "tail -5 ${bridge_log[a]}"

assert_eq 0 "$(sed '/leading (Lease/,$d' "${bridge_log[a]}" | grep -c 'workload w: ')" "actions of the restarted bridge while it stood by"
assert_eq 0 "$(sed '1,/leading (Lease/d' "${bridge_log[b]}" | sed '1,/signal 15/d' | grep -c 'workload w: ')" "actions of the bridge after it stopped"
double "nodes/$bad" '{"ready":true}'

# A leader that stalls (SIGSTOP) longer than the lease duration: the other takes over and fails the
# workload over; the stalled one, continued, finds the Lease taken and acts on nothing it knew.
start_bridge b
wait_for "grep -q 'standing by; the leader is $(identity_of a)' ${bridge_log[b]}" 10 "tail -5 ${bridge_log[b]}"
kill -STOP "${bridge_pid[a]}"
wait_for "grep -q 'leading (Lease team/safe-kube-bridge)' ${bridge_log[b]}" 15 "tail -5 ${bridge_log[b]}"
bad=$(node_of_pod w-a3 1)
double "nodes/$bad" '{"ready":false}'
wait_for "[[ \$(attempt_on b) == '4 Running' ]]" 40 "tail -5 ${bridge_log[b]}"
double "nodes/$bad" '{"ready":true}'
# The new leader stops (the Lease given up) before the stalled one continues: that one takes the
# Lease again at once, and must first recover what happened meanwhile, not act on what it knew.
kill -TERM "${bridge_pid[b]}"
wait "${bridge_pid[b]}" || fail "the leading bridge did not exit 0 on SIGTERM"
stalled_lines=$(wc -l <"${bridge_log[a]}")
kill -CONT "${bridge_pid[a]}"
# (Its first reconcile of every workload is logged once done: any stale action comes before.)
wait_for "tail -n +$((stalled_lines + 1)) ${bridge_log[a]} | grep -q 'leading: every workload reconciled once'" 10 "tail -5 ${bridge_log[a]}"
assert_eq "4 Running" "$(attempt_on a)" "the workload on the leader again"
stale=$(tail -n +$((stalled_lines + 1)) "${bridge_log[a]}" | grep 'workload w: ' || true)
[[ -z $stale ]] || fail "the stalled leader acted after it continued:"$'\n'"$stale"$'\n'"its log since:"$'\n'"$(tail -n +$((stalled_lines + 1)) "${bridge_log[a]}")"

# Every Job was created once: attempts 1 to 4, nothing else.
created=$(curl -sS -X POST "$KUBE/_double/history" | jq -r '[.[] | select(.kind == "Job" and .type == "ADDED") | .name] | sort | join(" ")')
assert_eq "w-a1 w-a2 w-a3 w-a4" "$created" "Jobs created (the double's history)"
printf 'PASS: bridge_kube_leader: leader killed mid-failover -> the standby led after %d.%03d s (lease 4 s) and finished the failover; leader stopped -> the other led after %d.%03d s; every Job created once\n' \
    $((takeover_kill / 1000)) $((takeover_kill % 1000)) $((takeover_release / 1000)) $((takeover_release % 1000))
