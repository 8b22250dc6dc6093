#!/usr/bin/env bash
# dashboard_types.sh: SaFE's Grafana dashboards (etc/grafana/dashboards) type-checked against
# Grafana's own dashboard model: the types of npm's @grafana/schema (generated from the schema
# Grafana's dashboards follow), with TypeScript's compiler, both installed with npm ci from the
# committed lockfile into the build tree. Each dashboard becomes a constant of type
# JsonOf<Dashboard> (json_of.ts: enums as the strings JSON holds): a missing required field, a
# field of the wrong type or one Grafana does not know fails. Skips (exit 77) only when npm is absent.
set -euo pipefail
src=${SAFE_SOURCE_DIR:?} build=${SAFE_BUILD_DIR:?}
# shellcheck source-path=SCRIPTDIR source=../lib/npm_locked.sh
. "$src/tests/lib/npm_locked.sh"
check=$build/grafana-dashboard-check
npm_locked "$src/tests/monitoring" "$check" "type-check the Grafana dashboards"
rm -rf "$check/ts"
mkdir -p "$check/ts"
cp "$src/tests/monitoring/json_of.ts" "$check/ts/"
count=0
for f in "$src"/etc/grafana/dashboards/*.json; do
    {
        echo "import type { Dashboard } from '@grafana/schema';"
        echo "import type { JsonOf } from './json_of.js';"
        printf 'export const dashboard: JsonOf<Dashboard> = '
        cat "$f"
        echo ';'
    } >"$check/ts/$(basename "$f" .json).ts"
    count=$((count + 1))
done
((count > 0)) || { echo "FAIL: no dashboards in $src/etc/grafana/dashboards"; exit 1; }
cat >"$check/tsconfig.json" <<'JSON'
{
  "compilerOptions": {"strict": true, "noEmit": true, "module": "nodenext", "moduleResolution": "nodenext",
                      "target": "es2022", "skipLibCheck": true},
  "include": ["ts/*.ts"]
}
JSON
# tsc names each problem as ts/<dashboard>.ts(line,column), the line of the dashboard's JSON + 3.
(cd "$check" && node_modules/.bin/tsc -p tsconfig.json) || { echo "FAIL: a dashboard does not fit Grafana's Dashboard type (lines are the JSON's + 3)"; exit 1; }
echo "PASS: $count dashboards fit @grafana/schema's Dashboard type ($(jq -r '.packages["node_modules/@grafana/schema"].version' "$check/package-lock.json"))"
