#!/usr/bin/env bash
# safed_systemd.sh DIR: safed as systemd runs it (etc/safed.service: Type=notify, WatchdogSec=).
# systemd is not PID 1 on these machines, so a datagram socket stands in for its notification
# socket, named in $NOTIFY_SOCKET as systemd names it: READY=1 once safed serves its API,
# WATCHDOG=1 at half the period while its loops turn, STOPPING=1 on SIGTERM. (A stalled loop that
# stops the pings: the Heartbeats unit tests.)
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
work=$(mktemp -d)
receiver=""
stop_safed
restore() {
    [[ -z $receiver ]] || kill "$receiver" 2>/dev/null || true
    [[ -z $(safed_pid) ]] || kill "$(safed_pid)"
    wait_for "[[ -z \$(safed_pid) ]]" 10 || true
    # The cluster's safed again, as it ran, for the other tests.
    (setsid "${safed_cmd[@]}" </dev/null >>"$SAFE_CLUSTER_DIR/log/safed.out" 2>&1 &)
    rm -rf "$work"
}
trap restore EXIT

# systemd's side: every datagram, one line each.
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        out.write(s.recv(4096).decode() + "\n")
' "$work/notify" "$work/states" &
receiver=$!
wait_for "[[ -S $work/notify ]]" 10
(NOTIFY_SOCKET=$work/notify WATCHDOG_USEC=2000000 setsid "${safed_cmd[@]}" </dev/null \
    >>"$SAFE_CLUSTER_DIR/log/safed.out" 2>&1 &)
wait_for "grep -qx READY=1 $work/states" 15 "cat $work/states; tail -n 5 $SAFE_CLUSTER_DIR/log/safed.out"
curl -sf "$SAFE_CONTROLLER_URL/metrics" >/dev/null || fail "safed said READY=1 but does not answer at $SAFE_CONTROLLER_URL"
wait_for "((\$(grep -cx WATCHDOG=1 $work/states) >= 3))" 10 "cat $work/states"
pid=$(safed_pid)
kill "$pid"
wait_for "grep -qx STOPPING=1 $work/states" 15 "cat $work/states"
wait_for "[[ -z \$(safed_pid) ]]" 15
first=$(head -n 1 "$work/states")
assert_eq READY=1 "$first" "safed's first notification"
echo "PASS: safed_systemd (READY=1, then $(grep -cx WATCHDOG=1 "$work/states") watchdog pings at 1 s, STOPPING=1)"
