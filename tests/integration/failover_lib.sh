# shellcheck shell=bash
# Helpers for the controller's (safed) end-to-end tests; source after tests/lib/cluster_test.sh.

# admin_comment JOBID: the whole AdminComment (it holds spaces).
admin_comment() {
    scontrol show job "$1" 2>/dev/null | sed -n 's/^ *AdminComment=//p'
}

# trainer_test_on_fixture "$@": the start of a one-job trainer test on the shared fixture cluster
# (its DIR the only argument): uses the cluster, makes $work with the trainer script
# $work/job.sh, and at exit cancels $jobid (set it once submitted), clears the simulated fault of
# GPU 0 on node $bad (set it before injecting one) and removes $work.
trainer_test_on_fixture() {
    (($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
    use_cluster "$1"
    work=$(mktemp -d)
    jobid="" bad=""
    trap 'end_trainer_test' EXIT
    write_trainer_script "$work/job.sh"
}
end_trainer_test() {
    [[ -z $jobid ]] || scancel "$jobid" 2>/dev/null || true
    # The checker resumes its own drain once the GPU is clean again.
    [[ -z $bad ]] || safectl inject --node "$bad" --gpu 0 --fault clear >/dev/null 2>&1 || true
    rm -rf "$work"
}

# all_nodes_in_service TIMEOUT_S: waits until every node of the cluster is in service (idle, mixed
# or allocated). A failover test moves its job to free nodes, and the nodes a job just left are
# used only when no others can hold it (after the second of its old run's revocation): a node an
# earlier test left drained (the health checker resumes its own drains only after
# health.pass_runs_before_resume clean runs) would turn the move into that wait.
all_nodes_in_service() {
    wait_for "! sinfo -h -N -o %T | grep -Evq '^(idle|mixed|allocated)\$'" "$1" "sinfo -N -o '%N %T %E'"
}

# own_cluster_dirs PREFIX: for a test that starts a cluster of its own: makes $dir (for the
# cluster, /tmp/PREFIX.XXXXXX, readable by all) and $work (scratch), and at exit stops that cluster and removes both.
own_cluster_dirs() {
    dir=$(mktemp -d "/tmp/$1.XXXXXX")
    chmod 0755 "$dir"  # ordinary users the tests make read its slurm.conf
    work=$(mktemp -d)
    trap 'end_own_cluster' EXIT
}
# start_own_cluster PREFIX NODES [UP_ARGS...]: own_cluster_dirs PREFIX, then a SaFE cluster of
# NODES nodes in $dir (more `safe-cluster up` arguments after), and uses it.
start_own_cluster() {
    own_cluster_dirs "$1"
    "$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes "$2" --safe "${@:3}" >/dev/null
    use_cluster "$dir"
}
end_own_cluster() {
    "$SAFE_CLUSTER_BIN" down --dir "$dir" >/dev/null 2>&1 || true
    rm -rf "$dir" "$work"
}

# write_trainer_script FILE: a batch script running safe-trainer on every node (one task each),
# passing its arguments on. The batch shell ignores the checkpoint signal: safed signals the shell
# and the steps, and only the trainer should act on it.
write_trainer_script() {
    cat >"$1" <<'JOB'
#!/bin/bash
trap '' USR1
srun --ntasks-per-node=1 safe-trainer "$@"
JOB
    chmod +x "$1"
}

# runs_again JOBID RESTARTS SINCE_EPOCH_S: true when the job runs with Slurm's restart count
# RESTARTS, in a run started at or after SINCE_EPOCH_S.
runs_again() {
    local state="" restarts="" start=""
    { read -r state && read -r restarts && read -r start; } < <(job_fields "$1" JobState Restarts StartTime)
    [[ $state == RUNNING && $restarts == "$2" && -n $start && $start != Unknown ]] || return 1
    (($(date -d "$start" +%s) >= $3))
}

# wait_restarted JOBID RESTARTS SINCE_EPOCH_S TIMEOUT_S: waits until runs_again.
wait_restarted() {
    wait_for "runs_again $1 $2 $3" "$4" "scontrol show job $1; tail -n 20 $SAFE_CLUSTER_DIR/log/safed.out"
}

# last_step_of_attempt OUTFILE ATTEMPT / first_step_of_attempt: the trainer's progress lines.
last_step_of_attempt() { awk -v a="$2" '$1 == "step" && $4 == a { s = $2 } END { print s + 0 }' "$1"; }
first_step_of_attempt() { awk -v a="$2" '$1 == "step" && $4 == a { print $2; exit }' "$1"; }

# safed_job JOBID JQ_FILTER: a field of safed's record of the job (safectl job ID --json).
safed_job() {
    local record
    record=$(safed_read safectl job "$1" --json) || exit 1
    jq -r "$2" <<<"$record"
}

# needs_slurm YYMM WHAT: sets $release to the cluster's Slurm release; before release YY.MM the
# test says the release has no WHAT and exits 77 (ctest's SKIP_RETURN_CODE for such tests).
needs_slurm() {
    local major minor
    release=$(scontrol -V | awk '{ print $2 }')
    IFS=. read -r major minor _ <<<"$release"
    if ((10#$major * 100 + 10#$minor < $1)); then
        echo "SKIP: Slurm $release has no $2 (${1:0:2}.${1:2} and later)"
        exit 77
    fi
}

# start_job_with_saved_start STEPS: a 2-node trainer job in $work (10 steps/s, a checkpoint every
# 10 steps, --safe-retries=2), past its step 20 and with its start saved by slurmctld: slurmctld
# saves its state a little after a change, and killed before it saved the job's start it comes back
# with the job PENDING and starts it again as if new, same restart count (docs/admin-guide.md).
# Tests of controller faults that are not about that wait for the save. Sets jobid, nodes (the
# job's) and last_node (the last of them).
start_job_with_saved_start() {
    write_trainer_script "$work/job.sh"
    jobid=$(sbatch --parsable -N2 --safe-retries=2 --safe-ckpt-dir="$work/ckpt" -o "$work/out" "$work/job.sh" \
        --steps "$1" --rate 10 --ckpt-every 10)
    wait_for "[[ \$(last_step_of_attempt $work/out 1) -ge 20 ]]" 40 "scontrol show job $jobid; cat $work/out"
    nodes=$(job_field "$jobid" NodeList)
    # shellcheck disable=SC2034 # the caller's
    last_node=$(scontrol show hostnames "$nodes" | tail -n1)
    wait_for "(( \$(stat -c %Y $dir/state/job_state) > $(date -d "$(job_field "$jobid" StartTime)" +%s) ))" 30 \
        "ls -l --full-time $dir/state"
}

# down_leaves_no_network: stops the --netns cluster in $dir and fails if a namespace, link or
# address that its `up` recorded in DIR/run/net is left.
down_leaves_no_network() {
    local subnet namespaces links ns link
    subnet=$(sed -n 's/^subnet //p' "$dir/run/net")
    namespaces=$(awk '$1 == "netns" { print $2 }' "$dir/run/net")
    links=$(awk '$1 == "link" { print $2 }' "$dir/run/net")
    "$SAFE_CLUSTER_BIN" down --dir "$dir" >/dev/null 2>&1 || fail "down failed"
    for ns in $namespaces; do
        ! grep -qF " $ns " /proc/self/mountinfo || fail "namespace $ns is still mounted after down"
    done
    for link in $links; do
        ! ip link show "$link" >/dev/null 2>&1 || fail "link $link is left after down"
    done
    ! ip -o -4 addr show | grep -q " $subnet\." || fail "an address in $subnet.0/24 is left after down"
}

# failover_in_grace SCRIPT OUT LOG: a 2-node trainer job (SCRIPT, output OUT) whose GPU 1 on its
# first node is lost, up to safed's checkpoint signal (in safed's LOG). No checkpoint directory:
# the grace period (8 s) runs out in full, a window to kill safed in. Sets job, bad (the node) and
# t0 (ms, the fault).
failover_in_grace() {
    job=$(sbatch --parsable -N2 --gpus-per-node=1 --safe-retries=3 --safe-ckpt-signal=USR1@8 \
        -o "$2" "$1" --steps 100000 --rate 10)
    wait_for "[[ \$(job_field $job JobState) == RUNNING ]]" 30
    bad=$(scontrol show hostnames "$(job_field "$job" NodeList)" | head -n1)
    # A real fault the health checker drains the node for (a drain by hand, it would resume).
    # shellcheck disable=SC2034  # for the tests that call it
    t0=$(now_ms)
    safectl inject --node "$bad" --gpu 1 --fault lost >/dev/null
    wait_for "grep -q 'job $job: checkpoint signal' $3" 15 "tail $3"
}

# start_idle_job: a 1-node, 1-GPU SaFE job (2 retries) that sleeps and ignores the checkpoint
# signal, its script and output in $work; returns once it runs and safed has passed over it
# twice. Sets job and node.
start_idle_job() {
    cat >"$work/job.sh" <<'JOB'
#!/bin/bash
trap '' USR1
while true; do sleep 1; done
JOB
    chmod +x "$work/job.sh"
    job=$(sbatch --parsable -N1 --gres=gpu:1 --safe-retries=2 -o "$work/job.out" "$work/job.sh")
    wait_for "[[ \$(job_field $job JobState) == RUNNING ]]" 30 "scontrol show job $job"
    # shellcheck disable=SC2034  # for the tests that call it
    node=$(job_field "$job" NodeList)
    wait_passes 2
}

# safed_pid: the safed of the cluster in use. stop_safed: stops it (SIGTERM: it closes its store)
# and keeps its command line in safed_cmd, for a test to start it again as it needs.
safed_pid() { cluster_pids_of "$SAFE_CLUSTER_DIR" safed | head -n1; }
stop_safed() {
    local pid
    pid=$(safed_pid)
    [[ -n $pid ]] || fail "no safed running for $SAFE_CLUSTER_DIR"
    # shellcheck disable=SC2034  # for the tests that source this file
    mapfile -d '' -t safed_cmd <"/proc/$pid/cmdline"
    kill "$pid"
    wait_for "[[ -z \$(safed_pid) ]]" 10
}
