# shellcheck shell=bash
# The Kubernetes API double (tests/kube/kube_api_double.py; no real API server can run here) for
# the bridge's tests. Source it after cluster_test.sh.
#   kube_test_dirs PREFIX        sets src (the repository), bin (the build's), work (a scratch
#                                directory /tmp/PREFIX.XXXXXX) and pids (processes to stop): at
#                                exit each is killed and waited for, and work removed
#   start_kube_double [ARGS...]  starts the double (token double-token, ARGS passed on), sets KUBE
#                                to its URL and writes $work/kubeconfig for it
#   kube_user_config             ensures the user safe-kube and writes $work/safe.yaml: the
#                                cluster's $SAFE_CONFIG with safe-kube in workspace ml and without
#                                its kube_bridge section, for the test to append its own

kube_test_dirs() {
    src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
    # shellcheck disable=SC2034 # the tests' own
    bin=${SAFE_BUILD_DIR:-$src/build}/bin
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    pids=()
    trap kube_test_cleanup EXIT
}
kube_test_cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
    rm -rf "$work"
}

start_kube_double() {
    python3 "$src/tests/kube/kube_api_double.py" --port-file "$work/kport" --token double-token "$@" &
    pids+=($!)
    wait_for "[[ -s $work/kport ]]" 10 "echo the double did not start"
    KUBE=http://127.0.0.1:$(cat "$work/kport")
    cat >"$work/kubeconfig" <<EOK
apiVersion: v1
kind: Config
current-context: double
clusters:
  - name: double
    cluster:
      server: $KUBE
users:
  - name: bridge
    user:
      token: double-token
contexts:
  - name: double
    context:
      cluster: double
      user: bridge
EOK
}

# Workloads on Kubernetes run as their user, never as root: a user of workspace ml submits them.
kube_user_config() {
    ensure_user safe-kube
    sed -e '/^kube_bridge:/,$d' -e 's/^    users: \[root, safe-member\]/    users: [root, safe-member, safe-kube]/' "$SAFE_CONFIG" >"$work/safe.yaml"
    grep -q 'safe-kube]' "$work/safe.yaml" || fail "could not add safe-kube to workspace ml of $SAFE_CONFIG"
}
