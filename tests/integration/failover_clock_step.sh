#!/usr/bin/env bash
# failover_clock_step.sh: on a cluster of its own with a network (safe-cluster up --netns, 3
# nodes), safed's system clock steps an hour forward, back, and back again.
#  - Under a job with --safe-hang-timeout=60 that prints every 25 s: no false hang (the job's last
#    output is seconds old, not an hour old), and each step is logged once.
#  - The last step comes while a failover waits out its checkpoint grace period (20 s): the job is
#    requeued once, when the 20 s are over, not an hour later; its MTTR is the time it took.
# The clock: safed runs under libfaketime (Debian's libfaketime), which offsets what its
# wall-clock calls return by the contents of a file, while its monotonic clock stays the real
# one, as on a host whose clock steps. The machine's own clock is never stepped: the test's
# neighbours (and CI's timing) share it. Slurm's clock therefore does not step here, as when
# safed runs on a host of its own; on slurmctld's host both step together.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"

faketime_lib=$(find /usr/lib -name libfaketimeMT.so.1 2>/dev/null | head -n1)
[[ -n $faketime_lib ]] || fail "libfaketime is not installed (apt-get install libfaketime; bootstrap.sh installs it)"
start_own_cluster sfck 3 --netns
log=$dir/log/safed.out

# safed again, under libfaketime: its wall clock is the real one plus the offset in $work/clock,
# read again each second.
stop_safed
echo "+0" >"$work/clock"
(LD_PRELOAD=$faketime_lib FAKETIME_TIMESTAMP_FILE=$work/clock FAKETIME_CACHE_DURATION=1 \
    FAKETIME_DONT_FAKE_MONOTONIC=1 setsid "${safed_cmd[@]}" </dev/null >>"$log" 2>&1 &)
wait_for "[[ -n \$(safed_pid) ]] && grep -q LD_PRELOAD= /proc/\$(safed_pid)/environ" 10
wait_passes 3

cat >"$work/slow.sh" <<'JOB'
#!/bin/bash
trap '' USR1
while true; do echo "tick $(date +%s)"; sleep 25; done
JOB
cat >"$work/quiet.sh" <<'JOB'
#!/bin/bash
trap '' USR1
while true; do sleep 1; done
JOB
chmod +x "$work/slow.sh" "$work/quiet.sh"
slow=$(sbatch --parsable -N1 --safe-retries=2 --safe-hang-timeout=60 -o "$work/slow.out" "$work/slow.sh")
wait_for "[[ \$(job_field $slow JobState) == RUNNING && -s $work/slow.out ]]" 30 "scontrol show job $slow"
wait_passes 3  # safed has seen its output

# steps_logged: how many clock steps safed logged.
steps_logged() { grep -c 'the system clock stepped' "$log" || true; }
# no_false_hang WHEN: ten passes after a step, the slow job (last output seconds ago) runs on.
no_false_hang() {
    wait_passes 10
    [[ $(cat "$log") != *"job $slow: checkpoint signal"* ]] || fail "safed took job $slow for hung after the clock stepped $1"
    assert_eq 0 "$(job_field "$slow" Restarts)" "restarts of job $slow after the step $1"
}

# 1. An hour forward, and back.
echo "+3600" >"$work/clock"
wait_for "grep -q 'the system clock stepped forward 3600 s' $log" 15 "tail -n 20 $log"
no_false_hang forward
echo "+0" >"$work/clock"
wait_for "grep -q 'the system clock stepped back 3600 s' $log" 15 "tail -n 20 $log"
no_false_hang back
assert_eq 2 "$(steps_logged)" "clock steps logged (once each)"

# 2. A failover in its grace period (20 s), and an hour back.
quiet=$(sbatch --parsable -N1 -x "$(job_field "$slow" NodeList)" --safe-retries=2 --safe-ckpt-signal=USR1@20 \
    -o "$work/quiet.out" "$work/quiet.sh")
wait_for "[[ \$(job_field $quiet JobState) == RUNNING ]]" 30 "scontrol show job $quiet"
wait_passes 2
node=$(job_field "$quiet" NodeList)
safectl inject --node "$node" --gpu 1 --fault ecc >/dev/null
wait_for "grep -q 'job $quiet: checkpoint signal' $log" 30 "tail -n 20 $log; scontrol show node $node"
signalled=$(now_ms)
echo "-3600" >"$work/clock"
wait_for "(( \$(steps_logged) == 3 ))" 15 "tail -n 20 $log"
wait_for "[[ \$(job_field $quiet Restarts) == 1 ]]" 40 "scontrol show job $quiet; tail -n 20 $log"
requeued=$(now_ms)
(((requeued - signalled) >= 18000)) || fail "job $quiet was requeued $((requeued - signalled)) ms after its signal, before its 20 s grace"
wait_restarted "$quiet" 1 0 30
wait_passes 3
mttr=$(safed_job "$quiet" '.failovers[0].mttr_s')
((mttr >= 20 && mttr < 60)) || fail "MTTR of job $quiet recorded as $mttr s: $(safed_job "$quiet" '.failovers[0]'; grep -e "job $quiet" -e clock "$log")"
assert_eq 1 "$(safed_job "$quiet" '.failovers | length')" "failovers of job $quiet"
no_false_hang "back again"
safectl inject --node "$node" --gpu 1 --fault clear >/dev/null
scancel "$slow" "$quiet"
echo "PASS: failover_clock_step (an hour forward and back: no false hang; an hour back in a grace period: requeued after $(((requeued - signalled) / 1000)) s, MTTR ${mttr} s)"
