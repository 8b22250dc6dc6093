#!/usr/bin/env bash
# monitoring_prometheus.sh: SaFE's dashboards and alerts against a real Prometheus (Debian's
# `prometheus`; Grafana cannot run here, so the test runs what Grafana would: every panel's query,
# through Prometheus's HTTP API). On a cluster of its own (3 nodes, SaFE, failover.lemon_faults 1
# so that one fault quarantines a node), Prometheus scrapes safed, the REST bridge and a real
# node_exporter whose textfile collector reads safe-healthcheck's metrics, with etc/prometheus's
# alerting rules loaded. A SaFE job is failed over by a GPU fault: then every panel's query
# returns data over the run, and the alert SafeNodeQuarantined fires in Prometheus.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
for tool in prometheus prometheus-node-exporter promtool; do
    command -v "$tool" >/dev/null || fail "$tool is missing (Debian's prometheus and prometheus-node-exporter: ./bootstrap.sh deps)"
done

own_cluster_dirs sfmon
# The fixture config, with a quarantine on a node's first fault.
{ cat "$SRC/tests/cluster/safe.yaml"; printf 'failover:\n  lemon_faults: 1\n'; } >"$work/safe.yaml"
"$SAFE_CLUSTER_BIN" up --dir "$dir" --nodes 3 --safe --config "$work/safe.yaml" >/dev/null
use_cluster "$dir"
# node_exporter's textfile directory: from now on each health run leaves its metrics there.
mkdir -p "$dir/node-exporter"

read -r prom_port exporter_port < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))')
PROM=http://127.0.0.1:$prom_port
pids=()
stop_monitoring() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    end_own_cluster
}
trap stop_monitoring EXIT

prometheus-node-exporter --web.listen-address="127.0.0.1:$exporter_port" --collector.disable-defaults \
    --collector.textfile --collector.textfile.directory="$dir/node-exporter" >"$work/node-exporter.log" 2>&1 &
pids+=($!)
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $SRC/etc/prometheus/safe-alerts.yml
scrape_configs:
  - job_name: safed
    static_configs: [{targets: ["${SAFE_CONTROLLER_URL#http://}"]}]
  - job_name: safe-kube-bridge
    static_configs: [{targets: ["${SAFE_BRIDGE_URL#http://}"]}]
  - job_name: node
    static_configs: [{targets: ["127.0.0.1:$exporter_port"]}]
YAML
promtool check config "$work/prometheus.yml" >/dev/null
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$work/prometheus.log" 2>&1 &
pids+=($!)
wait_for "curl -fsS $PROM/-/ready >/dev/null" 30 "cat $work/prometheus.log"
start=$(date +%s)

# promql EXPR: the number of series EXPR returns now.
promql() { curl -fsS --get "$PROM/api/v1/query" --data-urlencode "query=$1" | jq '.data.result | length'; }
wait_for "(( \$(promql 'up == 1') == 3 ))" 30 "curl -s $PROM/api/v1/targets | jq '.data.activeTargets[] | {job: .labels.job, health, lastError}'"

# Traffic for the bridge's panels: a refused request and an answered one.
curl -s -o /dev/null "$SAFE_BRIDGE_URL/api/v1/workloads"
token=$(scontrol token username=root lifespan=600 | sed -n 's/^SLURM_JWT=//p')
curl -fsS -o /dev/null -H "Authorization: Bearer $token" "$SAFE_BRIDGE_URL/api/v1/workloads"
bridge=$(curl -fsS "$SAFE_BRIDGE_URL/metrics")
for series in 'safe_bridge_requests_total{code="2xx"} [1-9]' 'safe_bridge_requests_total{code="4xx"} [1-9]' \
    'safe_bridge_request_duration_seconds_count [1-9]'; do
    grep -q "^$series" <<<"$bridge" || fail "the bridge did not count its requests: no '$series' in"$'\n'"$bridge"
done

# A SaFE job, failed over by a GPU fault on its node (which the fault also quarantines).
jobid=$(sbatch --parsable -N1 --gpus-per-node=1 --safe-retries=2 -o /dev/null --wrap 'sleep 600')
wait_for "[[ \$(job_field $jobid JobState) == RUNNING ]]" 30 "scontrol show job $jobid"
bad=$(job_field "$jobid" NodeList)
t0=$(date +%s)
safectl inject --node "$bad" --gpu 0 --fault ecc >/dev/null
wait_restarted "$jobid" 1 "$t0" 30
wait_for "(( \$(promql 'safe_mttr_seconds_count > 0') == 1 ))" 30 "curl -s $SAFE_CONTROLLER_URL/metrics | grep mttr"
wait_for "(( \$(promql 'safe_node_quarantined{node=\"$bad\"}') == 1 ))" 30 "safectl status"

# The alert, as Prometheus evaluates the shipped rule.
wait_for "[[ \$(curl -fsS $PROM/api/v1/alerts | jq -r '.data.alerts[] | select(.labels.alertname == \"SafeNodeQuarantined\" and .state == \"firing\") | .labels.node') == $bad ]]" \
    30 "curl -s $PROM/api/v1/alerts | jq .; curl -s $PROM/api/v1/rules | jq '.data.groups[].rules[] | {name, health, lastError}'"
# Every rule loaded and evaluated without an error on the real series.
errors=$(curl -fsS "$PROM/api/v1/rules" | jq -r '.data.groups[].rules[] | select(.health != "ok") | "\(.name): \(.lastError)"')
[[ -z $errors ]] || fail "rules in error: $errors"

# The health checker's metrics came through node_exporter for every node.
wait_for "(( \$(promql 'safe_health_last_run_timestamp_seconds') == 3 ))" 30 "ls -l $dir/node-exporter; cat $work/node-exporter.log"
(( $(promql "safe_health_check{node=\"$bad\",check=\"ecc_uncorrectable\",status=\"fail\"} == 1") == 1 )) ||
    fail "node_exporter does not report $bad's failing ECC check: $(cat "$dir/node-exporter/safe-healthcheck-$bad.prom")"
# promtool's lint of what each exporter serves.
for url in "$SAFE_CONTROLLER_URL/metrics" "$SAFE_BRIDGE_URL/metrics" "http://127.0.0.1:$exporter_port/metrics"; do
    lint=$(curl -fsS "$url" | promtool check metrics 2>&1) || fail "promtool check metrics $url: $lint"
done

# Rates need two samples in their window: the series the failover began (time lost per workspace)
# scraped three times over.
wait_for "(( \$(promql 'count_over_time(safe_time_lost_seconds_total[1m]) >= 3') == 1 ))" 30 "curl -s $SAFE_CONTROLLER_URL/metrics"
# The window ends a second from now: its steps are whole seconds, and the newest samples (the
# failover's) may be newer than the last whole second.
python3 "$SRC/tests/monitoring/check_dashboards.py" --prometheus "$PROM" --start "$start" --end $(($(date +%s) + 1))
scancel "$jobid"
printf 'PASS: monitoring_prometheus: job %s failed over off %s; every panel has data; SafeNodeQuarantined fired\n' "$jobid" "$bad"
