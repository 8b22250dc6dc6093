#!/usr/bin/env bash
# safed_systemd.sh: safed as systemd runs it (etc/systemd/safed.service: Type=notify, WatchdogSec=), on a
# cluster of its own. systemd is not PID 1 on these machines, so a datagram socket stands in for
# its notification socket, named in $NOTIFY_SOCKET as systemd names it:
#  - READY=1 once safed serves its API, then WATCHDOG=1 pings while its loops turn;
#  - slurmctld hung (SIGSTOP): safed's pass waits in libslurm, the main loop stops turning, and
#    the pings stop (systemd would restart safed); slurmctld back: the pings go on;
#  - STOPPING=1 on SIGTERM;
#  - its stderr is the journal's stream ($JOURNAL_STREAM names the log file): each line starts
#    with its syslog priority (<3> the stall, <5> the start), for the journal to record.
# The bridge (safe-kube-bridge.service) and the health agent (safe-healthcheck.service) are
# Type=notify too: each says READY=1 once it serves (the bridge) or has read its config (the
# agent), and STOPPING=1 on SIGTERM.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

start_own_cluster sfsd 1
log=$dir/log/safed.out
receivers=() ctld="" daemons=()
cleanup() {
    [[ -z $ctld ]] || kill -CONT "$ctld" 2>/dev/null || true
    ((${#daemons[@]} == 0)) || kill "${daemons[@]}" 2>/dev/null || true
    ((${#receivers[@]} == 0)) || kill "${receivers[@]}" 2>/dev/null || true
    end_own_cluster
}
trap cleanup EXIT
stop_safed

# receive NAME: systemd's side, a socket $work/NAME.sock writing every datagram to $work/NAME, one
# line each.
receive() {
    python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        out.write(s.recv(4096).decode() + "\n")
' "$work/$1.sock" "$work/$1" &
    receivers+=($!)
    wait_for "[[ -S $work/$1.sock ]]" 10
}
receive states
pings() { grep -cx WATCHDOG=1 "$work/states" || true; }
# WatchdogSec=3: a loop still for 1.5 s stops the pings, which go every 0.75 s.
touch "$log"
(NOTIFY_SOCKET=$work/states.sock WATCHDOG_USEC=3000000 JOURNAL_STREAM=$(stat -c %d:%i "$log") SAFE_CLUSTER_DIR=$dir setsid "${safed_cmd[@]}" </dev/null >>"$log" 2>&1 &)
wait_for "grep -qx READY=1 $work/states" 15 "cat $work/states; tail -n 5 $log"
assert_eq READY=1 "$(head -n 1 "$work/states")" "safed's first notification"
curl -sf "$SAFE_CONTROLLER_URL/metrics" >/dev/null || fail "safed said READY=1 but does not answer at $SAFE_CONTROLLER_URL"
wait_for "((\$(pings) >= 3))" 10 "cat $work/states"

ctld=$(cluster_pids_of "$dir" slurmctld)
[[ -n $ctld ]] || fail "no slurmctld in $dir"
kill -STOP "$ctld"
wait_for "grep -q 'safed: watchdog: not telling systemd all is well: stalled: .*main loop' $log" 20 "tail -n 5 $log"
stalled_at=$(pings)
sleep 2  # the window in which a live safed pings twice or more: none may come
assert_eq "$stalled_at" "$(pings)" "pings while the main loop was stalled"
kill -CONT "$ctld"
ctld=""
wait_for "grep -q 'safed: watchdog: every loop turns again' $log" 30 "tail -n 5 $log"
wait_for "((\$(pings) > stalled_at))" 10 "cat $work/states"

kill "$(safed_pid)"
wait_for "grep -qx STOPPING=1 $work/states" 15 "cat $work/states"
grep -q '^<5>safed: started; config ' "$log" || fail "safed's start is not logged at priority 5 (notice) for the journal: $(grep 'safed: started' "$log")"
grep -q '^<3>safed: watchdog: not telling systemd' "$log" || fail "safed's stall is not logged at priority 3 (error) for the journal"

# The bridge: READY=1 once its API answers (any free port: it prints the one it got).
receive bridge
mkdir -p "$work/bridge-work"
chmod 0755 "$work/bridge-work"
NOTIFY_SOCKET=$work/bridge.sock SLURM_CONF=$dir/slurm.conf "$SAFE_BUILD_DIR/bin/safe-kube-bridge" --config "$dir/safe.yaml" \
    --listen 127.0.0.1:0 --jwt-key-file "$dir/jwt.key" --work-dir "$work/bridge-work" >"$work/bridge.log" 2>&1 &
daemons+=($!)
wait_for "grep -qx READY=1 $work/bridge" 15 "cat $work/bridge.log"
port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$work/bridge.log")
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || fail "the bridge said READY=1 but does not answer on port '$port'"
kill "${daemons[-1]}"
wait_for "grep -qx STOPPING=1 $work/bridge" 15 "cat $work/bridge.log"

# The health agent (sim GPUs, no Slurm): READY=1 before its first round.
receive agent
printf 'health:\n  backend: sim\n  sim_dir: %s/sim\n  state_dir: %s/health\n  expected_gpus: 2\n' "$work" "$work" >"$work/agent.yaml"
NOTIFY_SOCKET=$work/agent.sock "$SAFE_BUILD_DIR/bin/safe-healthcheck" --config "$work/agent.yaml" --node n1 --no-slurm --watch \
    >"$work/agent.log" 2>&1 &
daemons+=($!)
wait_for "grep -qx READY=1 $work/agent" 15 "cat $work/agent.log"
kill "${daemons[-1]}"
wait_for "grep -qx STOPPING=1 $work/agent" 15 "cat $work/agent.log"
echo "PASS: safed_systemd (READY=1, pings; slurmctld hung: pings stopped at $stalled_at, and went on once it was back; STOPPING=1; the bridge and the health agent: READY=1, STOPPING=1)"
