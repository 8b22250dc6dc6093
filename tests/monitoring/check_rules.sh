#!/usr/bin/env bash
# check_rules.sh: etc/prometheus's alerting rules pass `promtool check rules` (syntax, templates)
# and their unit tests (tests/monitoring/safe-alerts.test.yml: each alert fires on the series that
# should fire it and not on the healthy ones beside it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
command -v promtool >/dev/null || { echo "promtool is missing (Debian's prometheus: ./bootstrap.sh deps)" >&2; exit 1; }
promtool check rules "$here/../../etc/prometheus/safe-alerts.yml"
cd "$here"  # the test file names the rules relative to itself
promtool test rules safe-alerts.test.yml
