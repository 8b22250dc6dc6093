#!/usr/bin/env bash
# console_browser.sh DIR: SaFE's web console (/console/ on the bridge of the cluster at DIR) in
# real headless Chromium (Debian's chromium), driven over the DevTools protocol by puppeteer-core
# (npm, from the committed lockfile; no browser download): sign-in with a token from `scontrol
# token`, the workloads list (a workload named like markup renders as text), a workload failed
# over by a GPU fault on the cluster (its page shows both attempts and the node fault; the log of
# attempt 1), a service (its replicas counted in the list, each on its page, a replica's log), the cluster page (that node drained by SaFE, its GPU 0 failing the ECC check in the
# GPU grid its health checker sent safed), stopping a workload with its button, a
# second user who sees none of the first's, an admin who sees them (as text) and the workspaces
# (workspace console's pending job held by its quota, its ETTR and time lost; its ETTR of today on
# the failovers page, from a job that ended), the session cookie's attributes,
# a cross-site form post refused (no cookie: SameSite=Strict) and a same-site one from another
# origin refused (no CSRF token), and sign-out. Prints the time the list of 1,000 workloads takes
# to render (docs/benchmarks.md) and leaves a screenshot of each page in the build tree.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=failover_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/failover_lib.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
[[ -n ${SAFE_BRIDGE_URL:-} ]] || fail "no SAFE_BRIDGE_URL in $1/env: is the cluster up with --safe?"
if ! command -v chromium >/dev/null; then
    echo "SKIP: chromium not installed (apt-get install chromium; ./bootstrap.sh installs it on Debian 12)"
    exit 77
fi
# shellcheck source=../lib/npm_locked.sh
. "$SAFE_SOURCE_DIR/tests/lib/npm_locked.sh"
driver=$SAFE_BUILD_DIR/console-browser-check
npm_locked "$SAFE_SOURCE_DIR/tests/console" "$driver" "drive Chromium through the console"
shots=$SAFE_BUILD_DIR/console-screenshots
rm -rf "$shots"
mkdir -p "$shots"
work=$(mktemp -d /tmp/safe-console.XXXXXX)
pids=() bad="" root_jobs=()
cleanup() {
    kill "${pids[@]}" 2>/dev/null || true
    # The service first: else the bridge would start its replica again.
    curl -sS -o /dev/null -X DELETE -H "Authorization: Bearer ${ROOT_JWT:-}" "$SAFE_BRIDGE_URL/api/v1/workloads/svc-console-svc" || true
    scancel -u safeconsole >/dev/null 2>&1 || true
    # The checker resumes its own drain once the GPU is clean again.
    [[ -z $bad ]] || safectl inject --node "$bad" --gpu 0 --fault clear >/dev/null 2>&1 || true
    local id
    for id in "${root_jobs[@]}"; do scancel "${id#slurm-}" >/dev/null 2>&1 || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Users of this test alone: other tests count their own users' workloads (bridge_slurm, safetest's).
ensure_user safeconsole
ensure_user safeconsole2
jwt() { scontrol token username="$1" lifespan=600 | sed -n 's/^SLURM_JWT=//p'; }
submit() {  # USER NAME [SPEC]: a workload of USER that sleeps (SPEC: more of its spec); prints its id
    curl -sS -X POST -H "Authorization: Munge $(runuser -u "$1" -- munge -n)" -H 'Content-Type: application/json' \
        --data-binary "$(jq -n --arg name "$2" --argjson more "${3:-{\}}" \
            '{name: $name, script: "exec sleep 300", labels: {suite: "console"}} + $more')" \
        "$SAFE_BRIDGE_URL/api/v1/workloads" | jq -r .id
}
submit_root() {  # NAME SPEC: root's workload of 1 GPU in workspace console (SPEC: more of its spec); prints its id
    curl -sS -X POST -H "Authorization: Bearer $ROOT_JWT" -H 'Content-Type: application/json' \
        --data-binary "$(jq -n --arg name "$1" --argjson more "$2" '{name: $name, workspace: "console", gpusPerNode: 1} + $more')" \
        "$SAFE_BRIDGE_URL/api/v1/workloads" | jq -r .id
}
field() { curl -sS -H "Authorization: Bearer $ROOT_JWT" "$SAFE_BRIDGE_URL/api/v1/workloads/$1" | jq -r ".$2"; }
phase() { field "$1" phase; }
ROOT_JWT=$(jwt root)

# safeconsole's workloads: one named like markup, one to stop from the console, one the attacks
# try to stop. safeconsole2 has none. The bridge refuses such a name, but a user names their own
# Slurm jobs, and one with the bridge's comment is listed as a workload: that is how it comes.
xss=slurm-$(cd /tmp && run_as safeconsole sbatch --parsable -J '<img src=x onerror=alert(1)>' --comment 'safe-bridge:{}' \
    -o /dev/null --wrap 'exec sleep 300')
to_stop=$(submit safeconsole 'console-sleep')
target=$(submit safeconsole 'console-sleep')
all_nodes_in_service 60
failed_over=$(submit safeconsole console-failover \
    '{"retries": 1, "gpusPerNode": 1, "script": "echo \"console attempt=${SLURM_RESTART_COUNT:-0} node=$SLURMD_NODENAME\"; exec sleep 300"}')
for id in "$xss" "$to_stop" "$target" "$failed_over"; do
    [[ $id =~ ^slurm-[0-9]+$ ]] || fail "the bridge did not create a workload: $id"
    wait_for "[[ \$(phase $id) == Running ]]" 60
done
# And a service of one replica (no probe: ready once it runs).
service=$(submit safeconsole console-svc '{"kind": "service", "port": 23000,
    "script": "echo \"console service replica=$SAFE_REPLICA\"; exec sleep 300"}')
assert_eq svc-console-svc "$service" "the service's id"
wait_for "[[ \$(phase $service) == Running ]]" 60 "curl -sS -H 'Authorization: Bearer $ROOT_JWT' $SAFE_BRIDGE_URL/api/v1/workloads/$service"
# A real failover: a GPU fault on the node of console-failover's first attempt, once that runs
# its script (Slurm shows a job running while its prolog still checks the GPUs).
wait_for "curl -sS -H 'Authorization: Bearer $ROOT_JWT' $SAFE_BRIDGE_URL/api/v1/workloads/$failed_over/logs | grep -q 'console attempt=0'" 30
bad=$(field "$failed_over" nodes)
safectl inject --node "$bad" --gpu 0 --fault ecc >/dev/null
wait_for "[[ \$(field $failed_over attempt) == 2 && \$(phase $failed_over) == Running ]]" 60 \
    "curl -sS -H 'Authorization: Bearer $ROOT_JWT' $SAFE_BRIDGE_URL/api/v1/workloads/$failed_over/events"

# Workspace console's figures (its quota is 1 GPU, no other test uses it): a job that ran and ended
# (today's ETTR on the failovers page), one that holds its GPU, and one the quota holds back
# (pending for Licenses) while that one runs.
done_job=$(submit_root console-done '{"script": "sleep 2"}')
root_jobs+=("$done_job")
wait_for "[[ \$(phase $done_job) == Succeeded ]]" 60 "curl -sS -H 'Authorization: Bearer $ROOT_JWT' $SAFE_BRIDGE_URL/api/v1/workloads/$done_job"
quota_job=$(submit_root console-quota '{"script": "exec sleep 300"}')
root_jobs+=("$quota_job")
wait_for "[[ \$(phase $quota_job) == Running ]]" 60 "squeue -j ${quota_job#slurm-} -o '%i %T %r'"
held_job=$(submit_root console-held '{"script": "exec sleep 300"}')
root_jobs+=("$held_job")
wait_for "[[ \$(squeue -h -j ${held_job#slurm-} -o %r) == Licenses ]]" 30 "squeue -j ${held_job#slurm-} -o '%i %T %r'"

# Another origin's pages, as an attacker's would be: the same page (a form that posts a stop of
# $target to the bridge, submitted on load) served on another port, reached once as another
# site (localhost: the cookie is SameSite=Strict, so it is not sent) and once as the same site
# (127.0.0.1 on another port: the cookie is sent, the CSRF token is not).
mkdir -p "$work/site"
cat >"$work/site/attack.html" <<HTML
<!doctype html><html><body>
<form id="f" method="POST" action="$SAFE_BRIDGE_URL/api/v1/workloads/$target/stop"></form>
<script>document.getElementById("f").submit();</script>
</body></html>
HTML
(cd "$work/site" && exec python3 -u -m http.server --bind 127.0.0.1 0 >"$work/site.log" 2>&1) &
pids+=($!)
wait_for "grep -q 'port [0-9]' '$work/site.log'" 10 "cat $work/site.log"
attack_port=$(sed -n 's/.* port \([0-9]*\) .*/\1/p' "$work/site.log" | head -n 1)
curl -sf "http://127.0.0.1:$attack_port/attack.html" >/dev/null || fail "the other origin's page server does not answer: $(cat "$work/site.log")"

SAFE_CONSOLE_URL=$SAFE_BRIDGE_URL/console/ SAFE_USER_JWT=$(jwt safeconsole) SAFE_OTHER_JWT=$(jwt safeconsole2) SAFE_ADMIN_JWT=$ROOT_JWT \
SAFE_XSS_ID=$xss SAFE_STOP_ID=$to_stop SAFE_TARGET_ID=$target SAFE_FAILED_OVER_ID=$failed_over SAFE_FAULT_NODE=$bad \
SAFE_SERVICE_ID=$service \
SAFE_SHOTS=$shots \
SAFE_CROSS_SITE_URL=http://localhost:$attack_port/attack.html SAFE_SAME_SITE_URL=http://127.0.0.1:$attack_port/attack.html \
NODE_PATH=$driver/node_modules node "$SAFE_SOURCE_DIR/tests/console/console_browser.cjs" ||
    fail "the browser test failed (above); screenshots in $shots"

# What the browser did, seen from the API: the stop went through, the attacks did not.
wait_for "[[ \$(phase $to_stop) == Stopped ]]" 30
assert_eq Running "$(phase "$target")" "the workload the cross-site and same-site posts tried to stop"
assert_eq Running "$(phase "$xss")" "the workload named like markup"
echo "PASS: console_browser (screenshots: $shots)"
