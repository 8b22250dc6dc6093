# shellcheck shell=bash
# Two local clusters side by side for the SaFE-vs-plain benchmarks (source it): one with SaFE
# installed, one plain, both started by tests/cluster/safe-cluster in directories of their own
# under /tmp, and stopped on every exit of the benchmark (end, error, ^C, SIGTERM); and a third,
# with SaFE configured otherwise (--third-arg), when the benchmark asks for one.
#
#   side_by_side_up PREFIX NODES [--safe-arg ARG]... [--plain-arg ARG]... [--both-arg ARG]...
#                   [--third-arg ARG]...
#       sets SAFE_DIR, PLAIN_DIR, THIRD_DIR (when --third-arg is given: SaFE installed, its own
#       --third-arg options, not --safe-arg's) and WORK (a scratch directory), then starts the
#       clusters at once
#   in_cluster DIR CMD...      runs CMD with DIR/env sourced (SLURM_CONF, SAFE_CONFIG, PATH)
#   job_fields_in DIR JOB FIELD...  job_fields (tests/lib/slurm_jobs.sh) on the cluster at DIR
#   job_field_in DIR JOB FIELD      one field
#   now_ms                          wall clock in milliseconds (tests/lib/slurm_jobs.sh)

SIDE_BY_SIDE_CLUSTER=$(cd "$(dirname "${BASH_SOURCE[0]}")/../cluster" && pwd -P)/safe-cluster
export SAFE_BUILD_DIR=${SAFE_BUILD_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)/build}
SAFE_DIR="" PLAIN_DIR="" THIRD_DIR="" WORK=""

# shellcheck source=slurm_jobs.sh
. "$(dirname "${BASH_SOURCE[0]}")/slurm_jobs.sh"

in_cluster() { (
    # shellcheck disable=SC1091
    . "$1/env"
    shift
    "$@"
); }

job_fields_in() { in_cluster "$1" job_fields "${@:2}"; }
job_field_in() { in_cluster "$1" job_fields "$2" "$3"; }

side_by_side_down() {
    trap '' INT TERM
    local d
    for d in "$SAFE_DIR" "$PLAIN_DIR" "$THIRD_DIR"; do
        [[ -z $d ]] || "$SIDE_BY_SIDE_CLUSTER" down --dir "$d" >/dev/null 2>&1 ||
            echo "warning: could not stop the cluster at $d (see safe-cluster down --dir $d)" >&2
    done
    rm -rf "$SAFE_DIR" "$PLAIN_DIR" "$THIRD_DIR" "$WORK"
}

side_by_side_up() {
    local prefix=$1 nodes=$2 rc_safe=0 rc_plain=0 rc_third=0 pid_safe pid_third=""
    shift 2
    local -a safe_args=() plain_args=() third_args=()
    while (($#)); do
        case $1 in
        --safe-arg) safe_args+=("$2") ;;
        --plain-arg) plain_args+=("$2") ;;
        --both-arg) safe_args+=("$2") plain_args+=("$2") third_args+=("$2") ;;
        --third-arg) third_args+=("$2") THIRD_DIR=x ;;
        *) echo "side_by_side_up: unknown option $1" >&2; return 2 ;;
        esac
        shift 2
    done
    SAFE_DIR=$(mktemp -d "/tmp/$prefix-s.XXXXXX")
    PLAIN_DIR=$(mktemp -d "/tmp/$prefix-p.XXXXXX")
    [[ -z $THIRD_DIR ]] || THIRD_DIR=$(mktemp -d "/tmp/$prefix-t.XXXXXX")
    WORK=$(mktemp -d "/tmp/$prefix-w.XXXXXX")
    trap side_by_side_down EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    "$SIDE_BY_SIDE_CLUSTER" up --dir "$SAFE_DIR" --nodes "$nodes" --safe ${safe_args[@]+"${safe_args[@]}"} \
        >"$WORK/up-safe.log" 2>&1 &
    pid_safe=$!
    if [[ -n $THIRD_DIR ]]; then
        "$SIDE_BY_SIDE_CLUSTER" up --dir "$THIRD_DIR" --nodes "$nodes" --safe "${third_args[@]}" >"$WORK/up-third.log" 2>&1 &
        pid_third=$!
    fi
    "$SIDE_BY_SIDE_CLUSTER" up --dir "$PLAIN_DIR" --nodes "$nodes" ${plain_args[@]+"${plain_args[@]}"} \
        >"$WORK/up-plain.log" 2>&1 || rc_plain=$?
    wait "$pid_safe" || rc_safe=$?
    [[ -z $pid_third ]] || wait "$pid_third" || rc_third=$?
    if ((rc_safe || rc_plain || rc_third)); then
        cat "$WORK/up-safe.log" "$WORK/up-plain.log" >&2
        [[ -z $pid_third ]] || cat "$WORK/up-third.log" >&2
        echo "side_by_side_up: a cluster did not start" >&2
        return 1
    fi
}
