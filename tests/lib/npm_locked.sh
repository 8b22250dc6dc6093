# shellcheck shell=bash
# npm_locked PACKAGE_DIR INTO WHAT: the npm packages of PACKAGE_DIR's package.json, as its
# package-lock.json pins them, installed with `npm ci` into INTO (in the build tree), again only
# when the lockfile changed. Without npm it ends the test as skipped (exit 77), saying it cannot
# WHAT; a failed `npm ci` fails it.
npm_locked() {
    local from=$1 into=$2
    if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
        echo "SKIP: npm/node not installed; install Node.js with npm to $3"
        exit 77
    fi
    mkdir -p "$into"
    cp "$from/package.json" "$from/package-lock.json" "$into/"
    if [[ ! -d $into/node_modules ]] || ! cmp -s "$from/package-lock.json" "$into/node_modules/.package-lock.json.installed"; then
        (cd "$into" && npm ci --no-audit --no-fund --loglevel=error) || { echo "FAIL: npm ci (is the npm registry reachable?)"; exit 1; }
        cp "$from/package-lock.json" "$into/node_modules/.package-lock.json.installed"
    fi
}
