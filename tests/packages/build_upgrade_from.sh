#!/usr/bin/env bash
# package.build_upgrade_from: the packages package.upgrade upgrades from, built by the earlier
# commit's own packaging/build from a checkout of it (clean_root.sh: upgrade_from_debs), once:
# kept under /var/cache/safe/upgrade-from/, they are reused while that directory is there.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=clean_root.sh
source "$(dirname "$0")/clean_root.sh"
out=$(upgrade_from_debs)
if compgen -G "$out/safe-common_*.deb" >/dev/null; then
    echo "the packages of $(basename "$out") are built already ($out)"
    exit 0
fi
src=$(mktemp -d /var/tmp/safe-upgrade-from.XXXXXX)
trap 'rm -rf "$src"' EXIT
t0=$SECONDS
from=$(basename "$out")
from=${from%%-*}
git clone -q --shared --no-checkout "$SAFE_SOURCE_DIR" "$src/tree"
git -C "$src/tree" checkout -q --detach "$from"
"$src/tree/packaging/build" --out "$src/debs" >"$src/build.log" 2>&1 || fail "building the packages of $from failed: $(tail -n 30 "$src/build.log")"
rm -rf "$out.new"
mkdir -p "$out.new"
cp "$src"/debs/*.deb "$out.new/"
rm -rf "$out"
mv "$out.new" "$out"
echo "built the packages of ${from:0:7} in $((SECONDS - t0)) s into $out"
