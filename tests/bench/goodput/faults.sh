# shellcheck shell=bash
# The goodput benchmark's fault injectors, sourced by run: each fault of the schedule hits the same
# job (its Nth node) on a cluster, as that kind of fault would (see run's header); broken GPUs stay
# broken until their repair time, dead nodes come back after it. They use run's state: WORK,
# DIR_OF, JOB, SCHED_*, REPAIR_S, t_start, and side_by_side.sh's helpers. inject and hit_window
# record what they hit in $WORK/faults.tsv and $WORK/secondary.tsv for the report.
# shellcheck disable=SC2154 # t_start, DIR_OF, JOB, SCHED_*: set by run before it sources this file

# trainer_procs SIDE: "PID JOBID NODE" for each safe-trainer process of the cluster.
trainer_procs() {
    local pid env
    for pid in $("$SIDE_BY_SIDE_CLUSTER" pids --dir "${DIR_OF[$1]}" | awk '$2 ~ /(^|\/)safe-trainer$/ { print $1 }'); do
        env=$(tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ") || continue
        awk -F= -v p="$pid" '$1 == "SLURM_JOB_ID" { j = $2 } $1 == "SLURMD_NODENAME" { n = $2 } END { print p, j, n }' <<<"$env"
    done
}
# stall SIDE JOBID: stops every rank of the job (SIGSTOP): no progress, no output, no checkpoint.
stall() {
    local pids
    pids=$(trainer_procs "$1" | awk -v j="$2" '$2 == j { print $1 }')
    [[ -z $pids ]] || kill -STOP $pids 2>/dev/null || true
    wc -w <<<"$pids"
}
# crash SIDE JOBID NODE SIGNAL: the job's rank on NODE dies of SIGNAL (srun -K ends the step).
crash() {
    local pids
    pids=$(trainer_procs "$1" | awk -v j="$2" -v n="$3" '$2 == j && $3 == n { print $1 }')
    [[ -z $pids ]] || kill "-$4" $pids 2>/dev/null || true
    wc -w <<<"$pids"
}
out_of() { echo "$WORK/$1/$2.out"; }
# recovered_since FILE MS: true when the job's output shows an attempt started after MS.
recovered_since() { awk -v t="$2" '$1 == "attempt-start" && $2 > t { f = 1 } END { exit !f }' "$1" 2>/dev/null; }

# Broken hardware while it is broken: "SIDE NODE EFFECT END_MS GPU" (EFFECT stall or abort).
WINDOWS=()
declare -A HANDLED=() DOWN_SINCE=()
NODE_REPAIRS=() # "SIDE NODE END_MS"
printf 'fault\tkind\tside\tjob\tnode\tgpu\tt0_ms\tranks\tlines0\tstatus\n' >"$WORK/faults.tsv"
printf 'side\tjob\tnode\tt_ms\teffect\n' >"$WORK/secondary.tsv"

# hit_window SIDE NODE EFFECT [FAULT_JOB]: applies a broken GPU's effect to the trainers on NODE;
# sets HITS to how many ranks it hit. A job it hits that the schedule did not aim at is a
# secondary hit. (Not in a subshell: it records the ranks it handled.)
HITS=0
hit_window() {
    local side=$1 node=$2 effect=$3 aimed=${4:-} pid job t
    HITS=0
    while read -r pid job _; do
        [[ -z ${HANDLED[$side:$pid]:-} ]] || continue
        HANDLED[$side:$pid]=1
        t=$(now_ms)
        if [[ $effect == stall ]]; then
            stall "$side" "$job" >/dev/null
        else
            kill -ABRT "$pid" 2>/dev/null || true
        fi
        HITS=$((HITS + 1))
        if [[ $job != "$aimed" ]]; then
            printf '%s\t%s\t%s\t%s\t%s\n' "$side" "$job" "$node" "$t" "$effect" >>"$WORK/secondary.tsv"
        fi
    done < <(trainer_procs "$side" | awk -v n="$node" '$3 == n')
}

inject() { # FAULT_INDEX SIDE
    local i=$1 side=$2 d=${DIR_OF[$2]} kind=${SCHED_KIND[$1]} job state nodes node gpu=${SCHED_GPU[$1]} t0 ranks=0
    local out lines0 status=injected
    job=${JOB[$side:${SCHED_JOB[i]}]}
    out=$(out_of "$side" "train${SCHED_JOB[i]}")
    t0=$(now_ms)
    state=$(in_cluster "$d" squeue -h -j "$job" -o %T 2>/dev/null || true)
    nodes=$(in_cluster "$d" squeue -h -j "$job" -o %N 2>/dev/null || true)
    node=$(in_cluster "$d" scontrol show hostnames "$nodes" 2>/dev/null | sed -n "$((SCHED_NODE[i] + 1))p" || true)
    lines0=$(wc -l <"$out" 2>/dev/null || echo 0)
    if [[ $state != RUNNING || -z $node ]]; then
        status="missed: job ${state:-ended}"
    elif [[ -n ${DOWN_SINCE[$side:$job]:-} ]] && ! recovered_since "$out" "${DOWN_SINCE[$side:$job]}"; then
        status="missed: job already down"
    else
        case $kind in
        gpu_lost | gpu_ecc)
            local effect=stall
            [[ $kind == gpu_lost ]] || effect=abort
            WINDOWS+=("$side $node $effect $((t0 + REPAIR_S * 1000)) $gpu")
            hit_window "$side" "$node" "$effect" "$job"
            ranks=$HITS
            in_cluster "$d" safectl inject --node "$node" --gpu "$gpu" --fault "${kind#gpu_}" >/dev/null ||
                echo "warning: safectl inject failed on $side $node" >&2
            ;;
        user_crash) ranks=$(crash "$side" "$job" "$node" SEGV) ;;
        hang) ranks=$(stall "$side" "$job") ;;
        node_death)
            # The peers stall at once (their collective lost a member); then the node dies.
            ranks=$(stall "$side" "$job")
            "$SIDE_BY_SIDE_CLUSTER" kill-node --dir "$d" --node "$node" 2>/dev/null ||
                echo "warning: kill-node $node failed on $side" >&2
            NODE_REPAIRS+=("$side $node $((t0 + REPAIR_S * 1000))")
            ;;
        esac
        if ((ranks == 0)); then
            # The job is starting: no rank to hit yet. A broken GPU stays broken (its window hits
            # the trainer once it starts, counted as a secondary hit).
            status="missed: no trainer running yet"
        else
            DOWN_SINCE[$side:$job]=$t0
        fi
    fi
    printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$kind" "$side" "$job" "${node:--}" "$gpu" "$t0" "$ranks" \
        "$lines0" "$status" >>"$WORK/faults.tsv"
    printf '  %6.1f s  fault %2d %-10s %-5s job %s %-6s %s\n' "$(bc -l <<<"($t0 - $t_start) / 1000")" "$i" "$kind" \
        "$side" "$job" "${node:--}" "$status"
}

repair_due() {
    local now=$1 w side node effect end gpu keep=()
    for w in ${WINDOWS[@]+"${WINDOWS[@]}"}; do
        read -r side node effect end gpu <<<"$w"
        if ((now >= end)); then
            in_cluster "${DIR_OF[$side]}" safectl inject --node "$node" --gpu "$gpu" --fault clear >/dev/null ||
                echo "warning: could not repair $side $node gpu$gpu" >&2
        else
            keep+=("$w")
        fi
    done
    WINDOWS=(${keep[@]+"${keep[@]}"})
    keep=()
    for w in ${NODE_REPAIRS[@]+"${NODE_REPAIRS[@]}"}; do
        read -r side node end <<<"$w"
        if ((now >= end)); then
            "$SIDE_BY_SIDE_CLUSTER" start-node --dir "${DIR_OF[$side]}" --node "$node" 2>/dev/null ||
                echo "warning: could not restart $side $node" >&2
        else
            keep+=("$w")
        fi
    done
    NODE_REPAIRS=(${keep[@]+"${keep[@]}"})
}
enforce_windows() {
    local w side node effect end gpu
    for w in ${WINDOWS[@]+"${WINDOWS[@]}"}; do
        read -r side node effect end gpu <<<"$w"
        hit_window "$side" "$node" "$effect"
    done
}
