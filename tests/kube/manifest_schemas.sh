#!/usr/bin/env bash
# manifest_schemas.sh: the Kubernetes objects safe-kube-bridge generates, and the manifests under
# etc/kubernetes/, validated against the official Kubernetes schemas (npm kubernetes-models,
# installed with npm ci from the committed lockfile into the build tree). Skips (exit 77) only
# when npm is absent.
set -euo pipefail
src=${SAFE_SOURCE_DIR:?} build=${SAFE_BUILD_DIR:?}
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
    echo "SKIP: npm/node not installed; install Node.js with npm to validate the Kubernetes manifests"
    exit 77
fi
check=$build/kube-manifest-check
mkdir -p "$check"
cp "$src/tests/kube/package.json" "$src/tests/kube/package-lock.json" "$src/tests/kube/validate_manifests.mjs" "$check/"
if [[ ! -d $check/node_modules/kubernetes-models ]] || ! cmp -s "$src/tests/kube/package-lock.json" "$check/node_modules/.package-lock.json.installed"; then
    (cd "$check" && npm ci --no-audit --no-fund --loglevel=error) || { echo "FAIL: npm ci (is the npm registry reachable?)"; exit 1; }
    cp "$src/tests/kube/package-lock.json" "$check/node_modules/.package-lock.json.installed"
fi
out=$check/manifests
rm -rf "$out"
mkdir -p "$out"
"$build/bin/safe-kube-manifest-samples" "$out"
for f in "$src"/etc/kubernetes/*.json; do
    [[ -e $f ]] && cp "$f" "$out/etc-$(basename "$f")"
done
cd "$check" && node validate_manifests.mjs "$out"
