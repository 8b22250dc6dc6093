#!/usr/bin/env bash
# failover_safed_ha.sh: two safed instances elected in etcd (safe-cluster up --safed-ha: lease
# TTL 2 s), on a cluster of their own (4 nodes). The active one is killed (SIGKILL) in the middle of a
# failover, after it sent the checkpoint signal and before the requeue:
#  - the standby takes over within 5 s and finishes that failover: exactly one requeue, the job
#    running again, and the history the first instance wrote (the signal) in the second's store;
#    safectl and the REST bridge, given no URL, find the second instance in etcd;
#  - the journal starts with a snapshot of the store, and every 3 entries (snapshot_every) a new
#    one drops the entries before it;
#  - the killed instance, started again with no store (a new host), is the standby: it takes no
#    action, and its store starts from the snapshot and catches up with the journal;
#  - both killed and started again at once: one becomes active, no action is repeated;
#  - the journal lost and one store moved aside (as when HA is enabled on a safed with history):
#    the first instance starts the journal with its store's snapshot, the second gets it.
# (Before: safed had no standby; with one safed killed, failovers waited for a human.)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

own_cluster_dirs sfha
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 4 --safe --safed-ha >/dev/null
use_cluster "$dir"
url_1=$SAFE_CONTROLLER_URL url_2=$SAFE_CONTROLLER_URL_2
log_1=$dir/log/safed.out log_2=$dir/log/safed-2.out

# instance_pid N: the pid of safed instance N (1: state in DIR/safed, 2: DIR/safed-2).
instance_pid() {
    local state=$dir/safed
    (($1 == 1)) || state=$dir/safed-$1
    "$SAFE_CLUSTER_BIN" pids --dir "$dir" | awk -v s="--state-dir $state" 'index($0, s) && substr($0, length($0) - length(s) + 1) == s { print $1 }'
}
# start_instance N: starts instance N again with the command line it had.
declare -A instance_cmd=()
remember_instance() { instance_cmd[$1]=$(tr '\0' ' ' <"/proc/$(instance_pid "$1")/cmdline"); }
start_instance() {
    local out=$log_1
    (($1 == 1)) || out=$log_2
    # shellcheck disable=SC2086  # the command line as it was: no argument has a space
    (SAFE_CLUSTER_DIR=$dir SLURM_CONF=$SLURM_CONF setsid ${instance_cmd[$1]} </dev/null >>"$out" 2>&1 &)
}
requeues_recorded() { safectl job "$1" --json | jq '[.actions[] | select(.action == "requeue")] | length'; }

remember_instance 1
remember_instance 2

# A workload through the REST bridge, which shows safed's history of it (the Attempt event).
token=$(scontrol token username=root lifespan=600 | sed -n 's/^SLURM_JWT=//p')
workload=$(curl -sSf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d '{"name":"ha","workspace":"ml","retries":1,"command":["true"],"gpusPerNode":1}' \
    "$SAFE_BRIDGE_URL/api/v1/workloads" | jq -r .id)
bridge_events() {
    curl -sf -H "Authorization: Bearer $token" "$SAFE_BRIDGE_URL/api/v1/workloads/$workload/events" |
        jq -r '[.items[].type] | join(" ")'
}
wait_for '[[ $(bridge_events) == *Attempt* ]]' 30 bridge_events
write_trainer_script "$work/job.sh"
failover_in_grace "$work/job.sh" "$work/out" "$log_1"
kill -KILL "$(instance_pid 1)"
killed=$(now_ms)
wait_for "grep -q 'safed: active' $log_2" 10 "tail $log_2"
takeover=$(($(now_ms) - killed))
echo "the standby took over $takeover ms after the active safed was killed"
((takeover <= 5000)) || fail "takeover took $takeover ms (more than 5 s)"
export SAFE_CONTROLLER_URL=$url_2
wait_for "runs_again $job 1 $((t0 / 1000))" 40 "scontrol show job $job; tail -n 20 $log_2"
mttr=$(($(now_ms) - t0))
wait_passes 5  # a repeated requeue would have been made in one of these passes
assert_eq 1 "$(job_field "$job" Restarts)" "Slurm's restart count of job $job"
assert_eq 1 "$(requeues_recorded "$job")" "requeues in the second instance's history"
# safectl and the REST bridge find the active instance in etcd (controller.ha in SAFE_CONFIG)
# when not given one: the first is dead, only the second can answer.
assert_eq 1 "$(env -u SAFE_CONTROLLER_URL safectl job "$job" --json | jq '.failovers | length')" \
    "failovers safectl found without a URL"
# The workload the bridge ran before the kill: its attempt, from safed's history, again.
wait_for '[[ $(bridge_events) == *Attempt* ]]' 30 bridge_events
safectl job "$job" --json | jq -e '[.actions[] | select(.action == "checkpoint signal")] | length == 1' >/dev/null ||
    fail "the first instance's checkpoint signal is not in the second's history: $(safectl job "$job" --json | jq -c '.actions')"

# The journal starts with a snapshot of the whole store (entry 1 when the first instance became
# active), and every 3 entries another replaces the entries before it (snapshot_every: 3).
# safe-cluster's controller.ha line: ha: {etcd_endpoints: [URL], prefix: P, ...}
etcd_url=$(sed -n 's/.*etcd_endpoints: \[\([^],]*\)\].*/\1/p' "$SAFE_CONFIG")
journal_prefix=$(sed -n 's/.*ha: {.*prefix: \([^,}]*\).*/\1/p' "$SAFE_CONFIG")/journal/
journal_keys() {
    local from to
    from=$(printf %s "$journal_prefix" | base64 -w0)
    to=$(printf %s "${journal_prefix%/}0" | base64 -w0)  # '0' follows '/': every key under the prefix
    curl -sf "$etcd_url/v3/kv/range" -d "{\"key\":\"$from\",\"range_end\":\"$to\",\"keys_only\":true}" |
        jq -r '.kvs[]?.key | @base64d'
}
oldest_entry() {
    local key
    key=$(journal_keys | head -n 1)
    key=${key##*/}
    echo $((10#${key:-0}))
}
wait_for '(($(oldest_entry) > 1))' 30 "journal_keys"
# A snapshot comes after the pass that made it due: 3 entries and what one pass (and the probes
# meanwhile) wrote; far fewer than the whole history.
echo "the journal keeps $(journal_keys | wc -l) entries, from entry $(oldest_entry) (a snapshot)"
(($(journal_keys | wc -l) <= 10)) || fail "more than 10 journal entries kept: $(journal_keys | tr '\n' ' ')"

# The killed instance comes back as the standby, on a host with no history (its store moved
# aside): it starts from the journal's snapshot, the entries before it long gone, and follows on.
mv "$dir/safed/safed.sqlite" "$work/safed-1.sqlite"
rm -f "$dir/safed/safed.sqlite-wal" "$dir/safed/safed.sqlite-shm"
start_instance 1
wait_for "[[ -n \$(instance_pid 1) ]]" 10
wait_for "[[ \$(curl -sf $url_1/metrics | awk '\$1 == \"safe_controller_active\" { print \$2 }') == 0 ]]" 15 "tail $log_1"
wait_for "grep -q \"the state store replaced by the journal's snapshot (entry [0-9]*, the store was at entry 0)\" $log_1" 15 \
    "tail -n 5 $log_1"
wait_passes 3
journal_position() { curl -sf "$1/metrics" | awk '$1 == "safe_journal_position" { print $2 }'; }
wait_for "[[ \$(journal_position $url_1) == \$(journal_position $url_2) ]]" 15 "tail $log_1"
assert_eq 1 "$(SAFE_CONTROLLER_URL=$url_1 requeues_recorded "$job")" "requeues in the first instance's store"
SAFE_CONTROLLER_URL=$url_1 safectl job "$job" --json |
    jq -e '[.actions[] | select(.action == "checkpoint signal")] | length == 1' >/dev/null ||
    fail "the first instance's own checkpoint signal is not in the store it rebuilt from the journal"

# Both killed and started again at once.
kill -KILL "$(instance_pid 1)" "$(instance_pid 2)"
wait_for "[[ -z \$(instance_pid 1)\$(instance_pid 2) ]]" 10
start_instance 1
start_instance 2
wait_for "[[ \$(grep -c 'safed: active: the state store holds the journal' $log_1 $log_2 | awk -F: '{ n += \$2 } END { print n }') -ge 3 ]]" 15 "tail $log_1 $log_2"
active_url=$url_1
[[ $(curl -sf "$url_2/metrics" | awk '$1 == "safe_controller_active" { print $2 }') != 1 ]] || active_url=$url_2
SAFE_CONTROLLER_URL=$active_url wait_passes 5
assert_eq 1 "$(job_field "$job" Restarts)" "Slurm's restart count of job $job after both restarted"
assert_eq 1 "$(SAFE_CONTROLLER_URL=$active_url requeues_recorded "$job")" "requeues after both restarted"
assert_eq RUNNING "$(job_field "$job" JobState)" "state of job $job"

# HA enabled on a safed that has history (here: a journal etcd lost): both stopped, the journal
# gone, the second host's store moved aside. The first, started alone, starts the journal with a
# snapshot of its store before anything else; the second, with no store, gets the history from it.
kill -KILL "$(instance_pid 1)" "$(instance_pid 2)"
wait_for "[[ -z \$(instance_pid 1)\$(instance_pid 2) ]]" 10
journal_dir=${journal_prefix%/}  # .../journal: its entries and .../journal-part/
curl -sf "$etcd_url/v3/kv/deleterange" -d "{\"key\":\"$(printf %s "$journal_dir" | base64 -w0)\",\"range_end\":\"$(printf %s "${journal_dir%l}m" | base64 -w0)\"}" >/dev/null
[[ -z $(journal_keys) ]] || fail "the journal is still in etcd: $(journal_keys | tr '\n' ' ')"
mv "$dir/safed-2/safed.sqlite" "$work/safed-2.sqlite"
rm -f "$dir/safed-2/safed.sqlite-wal" "$dir/safed-2/safed.sqlite-shm"
restored_before=$(grep -c "replaced by the journal's snapshot (entry [0-9]*, the store was at entry 0)" "$log_2" || true)
start_instance 1
wait_for "[[ \$(curl -sf $url_1/metrics | awk '\$1 == \"safe_controller_active\" { print \$2 }') == 1 ]]" 15 "tail $log_1"
first=$(oldest_entry)
((first > 1)) || fail "the journal did not start with the store's snapshot: $(journal_keys | tr '\n' ' ')"
start_instance 2
wait_for "[[ \$(grep -c \"replaced by the journal's snapshot (entry [0-9]*, the store was at entry 0)\" $log_2) -gt $restored_before ]]" 15 \
    "tail -n 5 $log_2"
assert_eq 1 "$(SAFE_CONTROLLER_URL=$url_2 requeues_recorded "$job")" "requeues in the second instance's store, from the snapshot"
scancel "$job"
safectl inject --node "$bad" --gpu 1 --fault clear >/dev/null
echo "PASS: failover_safed_ha (active safed killed after the signal: standby active in $((takeover / 100))00 ms, one requeue, running again after $((mttr / 1000)) s; both restarted: no action repeated)"
