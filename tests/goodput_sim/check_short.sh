#!/usr/bin/env bash
# check_short.sh: the goodput simulation's invariants on its short runs (issue 19): every policy
# meets the same trace, ETTR lies in (0, 1], every fault of the trace is accounted for, the
# jobs' GPU time adds up to what they were allocated, a job that completed kept exactly the work
# it asked for, and the same seed gives the same figures.
set -euo pipefail
: "${SAFE_BUILD_DIR:?SAFE_BUILD_DIR (the build tree) is not set}"
sim=$SAFE_BUILD_DIR/bin/safe-goodput-sim
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: check_short.sh: $*" >&2; exit 1; }

for scenario in llama3 mixed; do
    "$sim" --scenario "$scenario" --short --seed 7 --json "$work/$scenario.json" >"$work/$scenario.txt" ||
        fail "$scenario: safe-goodput-sim failed: $(cat "$work/$scenario.txt")"
    # Each check prints what breaks it; none may print anything.
    broken=$(jq -r '
      .traces as $traces
      | (.results | group_by([.ckpt_interval_min, .spares])[]
         | select((map(.policy) | sort) != ["plain", "primus", "safe"])
         | "ckpt \(.[0].ckpt_interval_min) spares \(.[0].spares): policies \(map(.policy))"),
        (.results[] | . as $r
         | ($traces[] | select(.spares == $r.spares)) as $t
         | "\($r.policy) ckpt \($r.ckpt_interval_min) spares \($r.spares): " as $name
         | (select($r.trace_digest != $t.digest) | $name + "trace \($r.trace_digest), not the run'"'"'s \($t.digest)"),
           (select($r.ettr <= 0 or $r.ettr > 1) | $name + "ETTR \($r.ettr)"),
           ($r.faults | select(.trace != $t.faults
                               or .interrupted + .idle_node + .out_of_service + .job_not_running != .trace)
            | $name + "faults \(.) of \($t.faults)"),
           (($r.productive_gpu_hours + $r.checkpoint_gpu_hours + $r.startup_gpu_hours + $r.queued_gpu_hours
             + $r.lost_gpu_hours) as $sum
            | select(($sum - $r.allocated_gpu_hours | fabs) > 1e-6 * $r.allocated_gpu_hours)
            | $name + "GPU-hours \($sum) accounted of \($r.allocated_gpu_hours)"),
           (select(($r.completed_kept_gpu_hours - $r.completed_work_gpu_hours | fabs)
                   > 1e-6 * ($r.completed_work_gpu_hours + 1))
            | $name + "completed jobs kept \($r.completed_kept_gpu_hours) GPU-hours of work, asked for \($r.completed_work_gpu_hours)"),
           (select($r.faults.interrupted == 0) | $name + "no fault struck a job: the run tests nothing"))
    ' "$work/$scenario.json")
    [[ -z $broken ]] || fail "$scenario:"$'\n'"$broken"
    "$sim" --scenario "$scenario" --short --seed 7 --json "$work/$scenario.again.json" >/dev/null
    [[ $(jq -c 'del(.seconds)' "$work/$scenario.json") == "$(jq -c 'del(.seconds)' "$work/$scenario.again.json")" ]] ||
        fail "$scenario: the same seed gave other figures"
    "$sim" --scenario "$scenario" --short --seed 8 --json "$work/$scenario.other.json" >/dev/null
    [[ $(jq -r '.traces[0].digest' "$work/$scenario.json") != "$(jq -r '.traces[0].digest' "$work/$scenario.other.json")" ]] ||
        fail "$scenario: seeds 7 and 8 drew the same trace"
    echo "$scenario: $(jq -r '[.results[] | "\(.policy) \(.ettr * 1000 | round / 1000)"] | join(", ")' "$work/$scenario.json")"
done

# Bad input is refused with a line that says what to do.
if out=$("$sim" --scenario llama4 2>&1); then fail "an unknown scenario was accepted"; fi
[[ $out == *"no scenario llama4"*"usage:"* ]] || fail "an unknown scenario's error: $out"
echo "PASS: goodput_sim.short"
