# One cluster's figures in the goodput benchmark (run's side_json): ETTR, MTTR and counts per
# fault kind, from what run measured ($prod and $wall in ms, the fault, secondary-hit and drain
# logs, the jobs' steps and restarts).
{
  ettr: (if $wall > 0 then (($prod / $wall) * 1000 | round) / 1000 else null end),
  mttr_s: ($kinds | map(. as $k | {key: $k, value:
      ([$faults[] | select(.kind == $k and .mttr_s != null) | .mttr_s] |
       if length > 0 then ((add / length) * 10 | round) / 10 else null end)}) | from_entries),
  faults: ($kinds | map(. as $k | {key: $k, value: {
      injected: ([$faults[] | select(.kind == $k and .status == "injected")] | length),
      recovered: ([$faults[] | select(.kind == $k and .mttr_s != null)] | length),
      missed: ([$faults[] | select(.kind == $k and .status != "injected")] | length)}}) | from_entries),
  steps_lost: $lost,
  jobs_completed: $completed,
  jobs_total: $total,
  user_errors_retried: $uretried,
  user_error_jobs: $uerrors,
  retries_wasted: $wasted,
  nodes_drained: $drained,
  requeues: $restarts,
  secondary_hits: ($secondary | length),
  other_jobs_completed: $fillers,
  productive_s: ($prod / 1000),
  wall_s: ($wall / 1000),
  jobs: $jobs,
  fault_log: $faults,
  secondary_log: $secondary,
  drain_log: $drains
}
