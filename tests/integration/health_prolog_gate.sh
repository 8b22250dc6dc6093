#!/usr/bin/env bash
# The prolog GPU gate on a fresh 2-node cluster: a job placed on a node whose allocated GPU is
# broken is refused by safe-prolog, the node is drained with a SaFE reason, Slurm requeues the
# job (nohold_on_prolog_fail) and it runs on the other node; evidence is written for the
# controller, safed starts the job again at once without spending a retry, and safe-healthcheck
# later resumes the node it did not drain itself. A --safe-health=strict job refused on a warning
# alone leaves the node and another user's job on it alone.
# The periodic checker is told to wait 100 runs before draining on this fault
# (fail_runs_before_drain), so the drain here is the prolog's alone.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
tmp=$(mktemp -d /tmp/safe-gate-XXXXXX)
chmod 0755 "$tmp"  # another user submits a job here
dir=$tmp/c
cleanup() {
    # Without the sanitizer runtimes a sanitizer cluster's env preloads: ps/pgrep hang with them.
    env -u LD_PRELOAD -u ASAN_OPTIONS "$SAFE_CLUSTER_BIN" down --dir "$dir" >/dev/null 2>&1 ||
        echo "health_prolog_gate: cluster $dir did not stop cleanly" >&2
    rm -rf "$tmp"
}
trap cleanup EXIT
sed 's/fail_runs_before_drain: .*/fail_runs_before_drain: 100/' "$SAFE_SOURCE_DIR/tests/cluster/safe.yaml" >"$tmp/safe.yaml"
grep -q 'fail_runs_before_drain: 100' "$tmp/safe.yaml" || fail "tests/cluster/safe.yaml lacks health.fail_runs_before_drain"
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 2 --safe --config "$tmp/safe.yaml" >/dev/null
use_cluster "$dir"
health=$dir/health

job_field() { scontrol show job "$jid" | grep -o " $1=[^ ]*" | head -1 | cut -d= -f2; }
# What Slurm did with the job, for a failure message: its record and its log lines.
job_story() {
    scontrol show job "$jid"
    grep -h -e "JobId=${jid}[ ,]" -e "job ${jid}[ ,]" -e "jobid ${jid}[ ,]" "$dir"/log/slurmctld.log "$dir"/log/slurmd-*.log | tail -40
}

# A node's first health run is the startup run; wait until both have had a normal one.
wait_for "[[ \$(jq -r .startup_run $health/n1.last.json) == false && \$(jq -r .startup_run $health/n2.last.json) == false ]]" 30
# The checker knows which slurmd runs it (that is how it tells the startup run).
slurmd_n1=$(awk '$1 == "slurmd-n1" {print $2}' "$dir/run/daemons")
assert_eq "$slurmd_n1" "$(jq -r .slurmd_instance "$health/n1.json" | cut -d: -f1)" "slurmd seen by the checker on n1"

# GPU 0 of n1 loses an XGMI link. Both nodes are idle, so Slurm places the job on n1, GPU 0.
safectl inject --node n1 --gpu 0 --fault xgmi >/dev/null
jid=$(sbatch --parsable -N1 --gpus=1 -o "$tmp/out" --wrap 'echo "ran on $SLURMD_NODENAME"')

wait_for '[[ $(node_reason n1) == "SaFE: gpu0 1 of 7 XGMI/NVLink links down" ]]' 30
wait_for '[[ $(job_field Restarts) -ge 1 ]]' 30 job_story

# Slurm 22.05 holds a requeued job back by ~2 minutes (BeginTime); safed starts it at once. The
# refused run costs the job no retry, and it has none to spend (no workspace: retries=0/0), so
# safed must not hold it either.
wait_for '[[ $(job_field JobState) == COMPLETED ]]' 40 job_story
assert_contains "$(scontrol show job "$jid")" "retries=0/0"
assert_contains "$(scontrol show job "$jid")" "(refused by safe-prolog)"
story=$(safectl job "$jid")
assert_contains "$story" "PROLOG_REFUSED"
assert_contains "$story" "n1 xgmi gpu0 1 of 7 XGMI/NVLink links down (refused by safe-prolog)" "the prolog's evidence, as safed read it"
assert_eq n2 "$(job_field NodeList)" "node the job finally ran on"
assert_contains "$(cat "$tmp/out")" "ran on n2"
# safed deletes a job's evidence once it has classified it; a clean epilog writes none at all.
wait_for "[[ ! -e $health/evidence/$jid.prolog.json ]]" 10 "ls -l $health/evidence"
[[ ! -e $health/evidence/$jid.n2.epilog.json ]] || fail "the epilog recorded a clean run on n2"

# The prolog's drain is SaFE's: the checker resumes n1 once the link is back (3 clean runs).
safectl inject --node n1 --gpu 0 --fault clear >/dev/null
wait_for '[[ -z $(node_reason n1) ]]' 60

# The job's health level reaches the prolog: with --safe-health=off the broken GPU is not gated
# and the job runs there; the epilog's post-job check, which runs whatever the level, then drains.
safectl inject --node n1 --gpu 0 --fault xgmi >/dev/null
jid=$(sbatch --parsable -w n1 --gpus=1 --safe-health=off -o "$tmp/out2" --wrap 'echo "ran on $SLURMD_NODENAME"')
wait_for '[[ $(job_field JobState) == COMPLETED ]]' 30
assert_contains "$(cat "$tmp/out2")" "ran on n1"
[[ ! -f $health/evidence/$jid.prolog.json ]] || fail "the prolog gated a --safe-health=off job"
assert_eq "SaFE: gpu0 1 of 7 XGMI/NVLink links down" "$(node_reason n1)" "n1 reason after the epilog"
# The epilog's record of the drain is read by safed with the job's classification, then deleted.
wait_for "[[ ! -e $health/evidence/$jid.n1.epilog.json ]]" 10 "ls -l $health/evidence"

# --safe-health=strict is the user's choice and the node is shared: a warning (PCIe replays
# above the limit, which the periodic checker tolerates) refuses that user's job only. Another
# user's job keeps running on n1, n1 is not drained, and the strict job runs on n2 at no retry.
safectl inject --node n1 --gpu 0 --fault clear >/dev/null
wait_for '[[ -z $(node_reason n1) ]]' 60
ensure_user safe-gate-other
for g in 0 1 2 3 4 5 6 7; do safectl inject --node n1 --gpu $g --fault replays >/dev/null; done
other=$(run_as safe-gate-other \
    sbatch --parsable -w n1 --gpus=1 -o /dev/null --wrap 'sleep 300')
wait_for "[[ \$(squeue -h -j $other -o %T) == RUNNING ]]" 30
jid=$(sbatch --parsable -w n1 --gpus=1 --safe-health=strict -o "$tmp/out3" --wrap 'echo "ran on $SLURMD_NODENAME"')
wait_for '[[ $(job_field JobState) == COMPLETED ]]' 60 job_story
assert_contains "$(cat "$tmp/out3")" "ran on n2"
# The output is opened for appending (SaFE's requeue setting): a start on n1 would show here.
[[ $(cat "$tmp/out3") != *"ran on n1"* ]] || fail "the refused job's script ran on n1: $(cat "$tmp/out3")"
assert_contains "$(scontrol show job "$jid")" "retries=0/0"
assert_contains "$(safectl job "$jid")" "(refused by safe-prolog)" "the strict refusal, as safed read it"
assert_contains "$(scontrol show job "$jid")" "n1 dropped from the required nodes" "n1 dropped from the job's -w"
assert_eq "" "$(node_reason n1)" "n1 reason after a strict refusal on a warning"
assert_eq RUNNING "$(squeue -h -j "$other" -o %T)" "the other user's job on n1"
# The same warning does not refuse a job at the standard level.
jid=$(sbatch --parsable -w n1 --gpus=1 -o "$tmp/out4" --wrap 'echo "ran on $SLURMD_NODENAME"')
wait_for '[[ $(job_field JobState) == COMPLETED ]]' 30 job_story
assert_contains "$(cat "$tmp/out4")" "ran on n1"
assert_eq 0 "$(job_field Restarts)" "restarts of a standard job on a warning"
scancel "$other"
echo "health prolog gate: all assertions passed"
