#!/usr/bin/env bash
# Configuring against a Slurm installation prefix (cmake/slurm.cmake): the version is read from
# that Slurm's slurm_version.h, its PluginDir is where the plugins install, and a Slurm outside
# the supported range fails at configure time naming the range. The prefixes are fake (headers and
# empty libraries): configure only reads them.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# fake_slurm PREFIX VERSION_HEX: a Slurm installation as configure sees it.
fake_slurm() {
    mkdir -p "$1/include/slurm" "$1/lib/slurm"
    printf '#define SLURM_VERSION_NUMBER 0x%s\n' "$2" >"$1/include/slurm/slurm_version.h"
    : >"$1/lib/libslurm.so"
    : >"$1/lib/slurm/select_cons_tres.so"
}

# configure NAME PREFIX: configures a build against PREFIX; prints cmake's output on one line
# (cmake wraps its messages), exits as cmake did.
configure() {
    local out rc=0
    out=$(cmake -S "$SAFE_SOURCE_DIR" -B "$tmp/build-$1" -DSAFE_SLURM_PREFIX="$2" 2>&1) || rc=$?
    tr -s '\n ' '  ' <<<"$out"
    return "$rc"
}

fake_slurm "$tmp/old" 150803
if out=$(configure old "$tmp/old"); then
    fail "configure accepted Slurm 21.08.3"
fi
assert_contains "$out" "Slurm 21.08.3 ($tmp/old/include) is not supported: SaFE builds against Slurm 22.05 to 26.05"

fake_slurm "$tmp/next" 1b0200
out=$(configure next "$tmp/next") && fail "configure accepted Slurm 27.02.0"
assert_contains "$out" "Slurm 27.02.0 ($tmp/next/include) is not supported"

out=$(configure none "$tmp/none") && fail "configure accepted a prefix with no Slurm"
assert_contains "$out" "No Slurm to build against (looked for $tmp/none/include/slurm/slurm_version.h and libslurm)"

fake_slurm "$tmp/2605" 1a0503
out=$(configure 2605 "$tmp/2605") || fail "configure refused Slurm 26.05.3:"$'\n'"$out"
assert_contains "$out" "Slurm 26.05.3: $tmp/2605/include, $tmp/2605/lib/libslurm.so, PluginDir $tmp/2605/lib/slurm"
echo "PASS: slurm_version_check"
