#!/usr/bin/env bash
# The shipped systemd units pass `systemd-analyze verify` (unknown or misspelt settings, a bad
# ExecStart), with ExecStart pointing at this build's programs (the installed paths do not exist
# here), and print their `systemd-analyze security` exposure (docs/controller.md records
# safed's). systemd is not PID 1 on these machines: this checks the files, not a running service.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
command -v systemd-analyze >/dev/null || fail "systemd-analyze not found (apt-get install systemd)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# All units side by side: the timer is verified with the service it starts.
for unit in "$SAFE_SOURCE_DIR"/etc/systemd/*; do
    sed "s|/usr/sbin/|$SAFE_BUILD_DIR/bin/|g" "$unit" >"$tmp/${unit##*/}"
done
for unit in "$tmp"/*; do
    name=${unit##*/}
    out=$(systemd-analyze verify --man=no "$unit" 2>&1) || fail "$name: systemd-analyze verify: $out"
    [[ -z $out ]] || fail "$name: systemd-analyze verify warns: $out"
    [[ $name == *.service ]] || { echo "$name: verified"; continue; }
    exposure=$(systemd-analyze security --offline=yes "$unit" 2>&1 | sed -n 's/.*Overall exposure level for [^:]*: //p')
    [[ -n $exposure ]] || fail "$name: systemd-analyze security printed no exposure"
    echo "$name: verified; exposure $exposure"
    # The daemons' hardening (docs/install.md): a unit that lost it scores far higher (9.6 bare).
    if [[ $name == safed.service || $name == safe-kube-bridge.service ]]; then
        awk -v e="${exposure%% *}" 'BEGIN { exit !(e <= 3.0) }' || fail "$name: exposure $exposure, above 3.0"
    fi
done
# Readiness (the programs' side: integration.safed_systemd) and safed's watchdog.
for name in safed safe-kube-bridge safe-healthcheck; do
    grep -qx 'Type=notify' "$SAFE_SOURCE_DIR/etc/systemd/$name.service" || fail "$name.service is not Type=notify"
done
grep -q '^WatchdogSec=' "$SAFE_SOURCE_DIR/etc/systemd/safed.service" || fail "safed.service has no WatchdogSec="
# The health checks see the node as jobs do: the kernel log (kmsg_critical) among the rest.
for name in safe-healthcheck.service safe-healthcheck-run.service; do
    ! grep -q '^ProtectKernelLogs=\|^ProtectHome=\|^PrivateTmp=\|^PrivateDevices=' "$SAFE_SOURCE_DIR/etc/systemd/$name" ||
        fail "$name hides part of the node from the checks: $(grep '^ProtectKernelLogs=\|^ProtectHome=\|^PrivateTmp=\|^PrivateDevices=' "$SAFE_SOURCE_DIR/etc/systemd/$name")"
done
# The bridge gives DIR/USER to the user (kube_bridge.slurm_work_dir).
grep -q '^CapabilityBoundingSet=.*CAP_CHOWN' "$SAFE_SOURCE_DIR/etc/systemd/safe-kube-bridge.service" ||
    fail "safe-kube-bridge.service lacks CAP_CHOWN (it chowns DIR/USER under slurm_work_dir)"
echo "PASS: systemd_units"
