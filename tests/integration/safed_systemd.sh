#!/usr/bin/env bash
# safed_systemd.sh: safed as systemd runs it (etc/safed.service: Type=notify, WatchdogSec=), on a
# cluster of its own. systemd is not PID 1 on these machines, so a datagram socket stands in for
# its notification socket, named in $NOTIFY_SOCKET as systemd names it:
#  - READY=1 once safed serves its API, then WATCHDOG=1 pings while its loops turn;
#  - slurmctld hung (SIGSTOP): safed's pass waits in libslurm, the main loop stops turning, and
#    the pings stop (systemd would restart safed); slurmctld back: the pings go on;
#  - STOPPING=1 on SIGTERM.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

start_own_cluster sfsd 1
log=$dir/log/safed.out
receiver="" ctld=""
cleanup() {
    [[ -z $ctld ]] || kill -CONT "$ctld" 2>/dev/null || true
    [[ -z $receiver ]] || kill "$receiver" 2>/dev/null || true
    end_own_cluster
}
trap cleanup EXIT
stop_safed

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
pings() { grep -cx WATCHDOG=1 "$work/states" || true; }
# WatchdogSec=3: a loop still for 1.5 s stops the pings, which go every 0.75 s.
(NOTIFY_SOCKET=$work/notify WATCHDOG_USEC=3000000 SAFE_CLUSTER_DIR=$dir setsid "${safed_cmd[@]}" </dev/null >>"$log" 2>&1 &)
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
echo "PASS: safed_systemd (READY=1, pings; slurmctld hung: pings stopped at $stalled_at, and went on once it was back; STOPPING=1)"
