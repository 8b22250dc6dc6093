# shellcheck shell=bash
# Reading Slurm jobs and the clock, for the integration tests, the benchmarks, the demo and the
# local cluster harness alike (source it; it uses the SLURM_CONF in force).

# now_ms: the wall clock in milliseconds.
now_ms() { date +%s%3N; }

# job_fields JOBID FIELD...: those fields of `scontrol show job` (e.g. JobState, Restarts,
# ExcNodeList), one per line, all from one read of the job. A check that combines fields must read
# them this way: fields read one after another can straddle a requeue, e.g. the old run's RUNNING
# next to the restart count and StartTime (the requeue's time) that the requeue has just set.
job_fields() {
    local record field
    record=$(scontrol show job -o "$1" 2>/dev/null) || return 1
    shift
    for field in "$@"; do tr ' ' '\n' <<<"$record" | sed -n "s/^$field=//p" | head -n1; done
}
# job_field JOBID FIELD: one field.
job_field() { job_fields "$1" "$2"; }
