# The goodput benchmark's result (run): both clusters' figures ($s: SaFE, $p: plain Slurm, from
# side.jq), what safed counted, and the SaFE/plain ratios.
def ratio(a; b): if a == null or b == null or b == 0 then null else ((a / b) * 100 | round) / 100 end;
{
  # Trainer attempts safed classified user_error beyond the crashes the schedule injected: an
  # infrastructure failure taken for a bug in the job (and so not retried).
  safe: ($s + {controller: {failovers_total: $failovers, user_error_failures_total: $uerr,
    infra_failures_classified_user_error:
      ([([$sjobs[].attempts[] | select(.class == "user_error")] | length)
        - ([$s.fault_log[] | select(.kind == "user_crash" and .status == "injected")] | length), 0] | max),
    jobs: $sjobs}}),
  plain: $p,
  ratio: {
    ettr: ratio($s.ettr; $p.ettr),
    mttr_s: ($s.mttr_s | with_entries(.value = ratio(.value; $p.mttr_s[.key]))),
    steps_lost: ratio($s.steps_lost; $p.steps_lost),
    jobs_completed: ratio($s.jobs_completed; $p.jobs_completed),
    user_errors_retried: ratio($s.user_errors_retried; $p.user_errors_retried),
    retries_wasted: ratio($s.retries_wasted; $p.retries_wasted),
    nodes_drained: ratio($s.nodes_drained; $p.nodes_drained)
  },
  run: {seed: $seed, short: ($short == 1), horizon_s: $horizon, elapsed_s: $elapsed}
}
