#!/usr/bin/env bash
# bridge_tls.sh DIR: safe-kube-bridge over HTTPS (kube_bridge.tls_cert/tls_key) beside the
# cluster at DIR: a client that trusts the certificate gets answers, plain HTTP does not, and a
# key that does not match the certificate stops the bridge with a message saying what to fix.
set -euo pipefail
# shellcheck source=../lib/cluster_test.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cluster_test.sh"
(($# == 1)) || { echo "usage: $0 CLUSTER_DIR" >&2; exit 2; }
use_cluster "$1"
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
bin=${SAFE_BUILD_DIR:-$src/build}/bin
work=$(mktemp -d /tmp/safe-tls.XXXXXX)
pid=""
trap '[[ -z $pid ]] || kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=other -keyout "$work/other.pem" -out /dev/null 2>/dev/null
config() {
    sed '/^kube_bridge:/,$d' "$SAFE_CONFIG" >"$work/safe.yaml"
    printf 'kube_bridge:\n  tls_cert: %s\n  tls_key: %s\n' "$work/cert.pem" "$1" >>"$work/safe.yaml"
}

config "$work/key.pem"
"$bin/safe-kube-bridge" --config "$work/safe.yaml" --listen 127.0.0.1:0 2>"$work/log" &
pid=$!
wait_for "grep -q 'listening on https://' $work/log" 10 "cat $work/log"
url=$(sed -n 's|.*listening on \(https://[0-9.]*:[0-9]*\).*|\1|p' "$work/log")
assert_eq '{"status":"ok"}' "$(curl -sS --cacert "$work/cert.pem" "$url/healthz")" "healthz over TLS"
assert_eq 200 "$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$work/cert.pem" -H "Authorization: Munge $(munge -n)" "$url/api/v1/nodes")" "an API call over TLS"
code=$(curl -sS -o /dev/null -w '%{http_code}' "http://${url#https://}/healthz" 2>/dev/null || true)
[[ $code != 200 ]] || fail "plain HTTP was answered on the TLS port"
kill "$pid"
wait "$pid" 2>/dev/null || true
pid=""

config "$work/other.pem"
expect_failure "not a matching PEM pair); fix kube_bridge.tls_cert and tls_key" \
    "$bin/safe-kube-bridge" --config "$work/safe.yaml" --listen 127.0.0.1:0
echo "bridge_tls: ok"
