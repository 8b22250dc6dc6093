#!/usr/bin/env bash
# safectl config check: output and exit codes, as an admin sees them.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
safectl="$SAFE_BUILD_DIR/bin/safectl"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

out=$("$safectl" config check "$SAFE_SOURCE_DIR/etc/safe.yaml")
assert_eq "ok" "$out" "shipped example is valid"

printf 'health:\n  interval_s: soon\n  intervl_s: 3\nworkspaces:\n  - name: ml\n  - name: ml\n' > "$tmp/bad.yaml"
set +e
out=$("$safectl" config check "$tmp/bad.yaml"); rc=$?
set -e
assert_eq 1 "$rc" "invalid file exits 1"
assert_contains "$out" "$tmp/bad.yaml:2:15: health.interval_s: expects an integer 5..86400, got 'soon'"
assert_contains "$out" "$tmp/bad.yaml:3:3: unknown key 'intervl_s' in health (did you mean 'interval_s'?)"
assert_contains "$out" "$tmp/bad.yaml:6:11: workspaces[1].name: duplicate workspace name 'ml' (first defined on line 5)"
assert_contains "$out" "3 errors in $tmp/bad.yaml"

# Without FILE: $SAFE_CONFIG.
out=$(SAFE_CONFIG="$SAFE_SOURCE_DIR/tests/cluster/safe.yaml" "$safectl" config check)
assert_eq "ok" "$out" "SAFE_CONFIG is read when no file is given"

set +e
out=$("$safectl" config check "$tmp/missing.yaml" 2>&1); rc=$?
set -e
assert_eq 1 "$rc" "missing file exits 1"
assert_contains "$out" "$tmp/missing.yaml: cannot read: No such file or directory"

set +e
"$safectl" frobnicate >/dev/null 2>&1; rc=$?
set -e
assert_eq 2 "$rc" "unknown command exits 2"
set +e
"$safectl" config check --bogus >/dev/null 2>&1; rc=$?
set -e
assert_eq 2 "$rc" "unknown option exits 2"
"$safectl" --help | grep -q "config check" || fail "--help lists config check"
echo "safectl config check: all assertions passed"
