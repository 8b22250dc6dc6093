# The goodput benchmark's result (run): the clusters' figures ($s: SaFE, $e: SaFE with elastic
# recovery, $p: plain Slurm, from side.jq), what safed counted on each SaFE cluster ($sc, $ec), and
# the ratios SaFE/plain, elastic/plain and elastic/SaFE.
def ratio(a; b): if a == null or b == null or b == 0 then null else ((a / b) * 100 | round) / 100 end;
def ratios(a; b): {
  ettr: ratio(a.ettr; b.ettr),
  mttr_s: (a.mttr_s | with_entries(.value = ratio(.value; b.mttr_s[.key]))),
  steps_lost: ratio(a.steps_lost; b.steps_lost),
  jobs_completed: ratio(a.jobs_completed; b.jobs_completed),
  user_errors_retried: ratio(a.user_errors_retried; b.user_errors_retried),
  retries_wasted: ratio(a.retries_wasted; b.retries_wasted),
  nodes_drained: ratio(a.nodes_drained; b.nodes_drained),
  other_jobs_completed: ratio(a.other_jobs_completed; b.other_jobs_completed)
};
# Trainer attempts safed classified user_error beyond the crashes the schedule injected: an
# infrastructure failure taken for a bug in the job (and so not retried).
def controller(side; c): c + {infra_failures_classified_user_error:
  ([([c.jobs[].attempts[] | select(.class == "user_error")] | length)
    - ([side.fault_log[] | select(.kind == "user_crash" and .status == "injected")] | length), 0] | max)};
{
  safe: ($s + {controller: controller($s; $sc)}),
  elastic: ($e + {controller: controller($e; $ec)}),
  plain: $p,
  ratio: ratios($s; $p),
  ratio_elastic: ratios($e; $p),
  ratio_elastic_safe: ratios($e; $s),
  run: {seed: $seed, short: ($short == 1), horizon_s: $horizon, elapsed_s: $elapsed}
}
