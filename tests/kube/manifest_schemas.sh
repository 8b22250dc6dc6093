#!/usr/bin/env bash
# manifest_schemas.sh: the Kubernetes objects safe-kube-bridge generates, and the manifests under
# etc/kubernetes/, validated against the official Kubernetes schemas (npm kubernetes-models,
# installed with npm ci from the committed lockfile into the build tree). Skips (exit 77) only
# when npm is absent.
set -euo pipefail
src=${SAFE_SOURCE_DIR:?} build=${SAFE_BUILD_DIR:?}
# shellcheck source-path=SCRIPTDIR source=../lib/npm_locked.sh
. "$src/tests/lib/npm_locked.sh"
check=$build/kube-manifest-check
npm_locked "$src/tests/kube" "$check" "validate the Kubernetes manifests"
cp "$src/tests/kube/validate_manifests.mjs" "$check/"
out=$check/manifests
rm -rf "$out"
mkdir -p "$out"
"$build/bin/safe-kube-manifest-samples" "$out"
for f in "$src"/etc/kubernetes/*.json; do
    [[ -e $f ]] && cp "$f" "$out/etc-$(basename "$f")"
done
cd "$check" && node validate_manifests.mjs "$out"
