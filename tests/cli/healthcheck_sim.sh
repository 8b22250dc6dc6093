#!/usr/bin/env bash
# safe-healthcheck, safectl inject and the prolog/epilog on the sim backend, without a cluster
# (--no-slurm): output, exit codes and time limits as an admin sees them.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
bin="$SAFE_BUILD_DIR/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/safe.yaml" <<YAML
health:
  backend: sim
  sim_dir: $tmp/sim
  state_dir: $tmp/state
  expected_gpus: 8
  check_timeout_s: 1
  gate_timeout_s: 1
YAML
export SAFE_CONFIG="$tmp/safe.yaml"
hc() { "$bin/safe-healthcheck" --node n1 --no-slurm "$@"; }

out=$(hc); rc=$?
assert_eq 0 "$rc" "healthy node exits 0"
assert_contains "$out" "safe-healthcheck: n1: healthy (16 pass, 0 fail, 0 unknown"

out=$("$bin/safectl" inject --node n1 --gpu 3 --fault ecc)
assert_contains "$out" "safectl: n1 gpu 3: ecc (simulated, $tmp/sim/n1.json)"
set +e
out=$(hc); rc=$?
set -e
assert_eq 1 "$rc" "critical failure exits 1"
assert_contains "$out" "unhealthy"
assert_contains "$out" "critical ecc_uncorrectable: gpu3 uncorrectable ECC=2"

set +e
json=$(hc --json); rc=$?
set -e
assert_eq 1 "$rc" "--json keeps the exit code"
assert_eq "fail" "$(jq -r '.checks[] | select(.check=="ecc_uncorrectable") | .status' <<<"$json")" "JSON names the failing check"
assert_eq "unhealthy" "$(jq -r .status "$tmp/state/n1.last.json")" "last run recorded for the controller"

# Warning only: suspect, exit 3.
"$bin/safectl" inject --node n1 --gpu all --fault clear >/dev/null
jq '.gpus[2].pcie_replay = 5000' "$tmp/sim/n1.json" > "$tmp/x" && mv "$tmp/x" "$tmp/sim/n1.json"
set +e
out=$(hc); rc=$?
set -e
assert_eq 3 "$rc" "warnings only exit 3"
assert_contains "$out" "suspect"

# A hung GPU library: the run still ends within check_timeout_s and the GPU checks are unknown.
"$bin/safectl" inject --node n1 --gpu all --fault clear >/dev/null
"$bin/safectl" inject --node n1 --gpu all --fault hang >/dev/null
start=$(date +%s%N)
out=$(hc); rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
assert_eq 0 "$rc" "one hung GPU query is not a failure"
assert_contains "$out" "10 unknown"
(( ms < 3000 )) || fail "hung GPU query took ${ms} ms, limit is check_timeout_s=1"
pgrep -f "gpu-snapshot-child --node n1" >/dev/null && fail "the hung GPU child survived the run"
"$bin/safectl" inject --node n1 --gpu all --fault clear >/dev/null

# Prolog gate and epilog evidence (no Slurm calls: --no-slurm).
"$bin/safectl" inject --node n1 --gpu 1 --fault lost >/dev/null
set +e
SLURM_JOB_ID=77 SLURM_JOB_GPUS=0,1 "$bin/safe-prolog" --node n1 --no-slurm 2>"$tmp/prolog.err"; rc=$?
set -e
assert_eq 1 "$rc" "prolog refuses a job whose GPU is lost"
assert_contains "$(cat "$tmp/prolog.err")" "safe-prolog: n1: job 77 refused: gpu1 lost"
SLURM_JOB_ID=78 SLURM_JOB_GPUS=2,3 "$bin/safe-prolog" --node n1 --no-slurm || fail "prolog passes a job on healthy GPUs"
SLURM_JOB_ID=79 SLURM_JOB_GPUS=1 SPANK__SLURM_SPANK_OPTION_safe_safe_health=off "$bin/safe-prolog" --node n1 --no-slurm \
  || fail "--safe-health=off skips the gate"
SLURM_JOB_ID=77 SLURM_JOB_GPUS=0,1 "$bin/safe-epilog" --node n1 --no-slurm 2>/dev/null || fail "epilog always exits 0"
assert_eq "gpu_responsive" "$(jq -r '.failing_checks[0].check' "$tmp/state/evidence/77.n1.epilog.json")" "epilog evidence names the check"
SLURM_JOB_ID=78 SLURM_JOB_GPUS=2,3 "$bin/safe-epilog" --node n1 --no-slurm 2>/dev/null || fail "epilog always exits 0"
[[ ! -e $tmp/state/evidence/78.n1.epilog.json ]] || fail "a clean epilog wrote a record"

# Usage errors.
set +e
"$bin/safectl" inject --node n1 --gpu 3 --fault fire >/dev/null 2>&1; rc=$?
assert_eq 2 "$rc" "unknown fault exits 2"
out=$("$bin/safectl" inject --node n1 --gpu 99 --fault ecc 2>&1); rc=$?
assert_eq 1 "$rc" "missing GPU exits 1"
assert_contains "$out" "no GPU 99 on this node"
printf 'health:\n  backend: cuda\n' > "$tmp/bad.yaml"
out=$("$bin/safe-healthcheck" --config "$tmp/bad.yaml" 2>&1); rc=$?
assert_eq 2 "$rc" "bad config exits 2"
assert_contains "$out" "safe-healthcheck: $tmp/bad.yaml:2:12: health.backend"
set -e
echo "safe-healthcheck on sim: all assertions passed"
