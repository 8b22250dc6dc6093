#!/usr/bin/env bash
# SaFE for Slurm: set up a machine, build, test, or run the demo.
#
#   ./bootstrap.sh deps    install the Debian packages the project needs (apt-get)
#   ./bootstrap.sh build   deps + configure + build (build/)
#   ./bootstrap.sh test    deps + build + the whole test suite (unit and integration)
#   ./bootstrap.sh demo    deps + build + a local 4-node Slurm cluster with SaFE and a demo job
#
# Environment: SAFE_SANITIZE=address,undefined builds into build-asan/ with sanitizers and tests
# that build; SAFE_BUILD_DIR overrides the build directory; SAFE_DEMO_DIR the demo cluster's.
set -euo pipefail

SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SANITIZE=${SAFE_SANITIZE:-}
BUILD_DIR=${SAFE_BUILD_DIR:-$SOURCE_DIR/build${SANITIZE:+-asan}}
DEMO_DIR=${SAFE_DEMO_DIR:-/tmp/safe-demo}

# Every Debian package the project needs, in one place.
PACKAGES=(
  # toolchain
  cmake g++ make pkg-config clang-14 libfuzzer-14-dev
  # Slurm and munge: daemons for the local cluster, headers and libraries to build against
  slurm-wlm slurmctld slurmd slurm-client libslurm-dev munge libmunge-dev
  # libraries
  libyaml-dev libjansson-dev libhwloc-dev librocm-smi-dev libcurl4-openssl-dev libspdlog-dev
  libboost-program-options-dev libsqlite3-dev libmicrohttpd-dev libjwt-dev libssl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev jq wrk procps iproute2 util-linux shellcheck curl python3 openssl
)

log() { printf '==> %s\n' "$*"; }
die() { printf 'bootstrap: %s\n' "$*" >&2; exit 1; }

deps() {
  local missing=() pkg
  for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  # The Kubernetes schema test runs node and npm: Debian's, unless the machine has its own.
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing+=(nodejs npm); fi
  ((${#missing[@]} == 0)) && return 0
  [[ $(id -u) == 0 ]] || die "missing packages (${missing[*]}); run as root: sudo $0 deps"
  log "installing ${#missing[@]} Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
}

build() {
  deps
  local args=(-S "$SOURCE_DIR" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSAFE_WERROR=ON)
  [[ -n $SANITIZE ]] && args+=("-DSAFE_SANITIZE=$SANITIZE")
  log "configuring in $BUILD_DIR"
  cmake "${args[@]}" >/dev/null
  log "building"
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

run_tests() {
  build
  [[ $(id -u) == 0 ]] || die "the integration tests start Slurm daemons and need root: sudo $0 test"
  log "running the test suite"
  ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600
}

demo() {
  build
  [[ $(id -u) == 0 ]] || die "the demo starts Slurm daemons and needs root: sudo $0 demo"
  exec "$SOURCE_DIR/tests/demo/run" --dir "$DEMO_DIR" --build-dir "$BUILD_DIR"
}

case "${1:-}" in
  deps) deps ;;
  build) build ;;
  test) run_tests ;;
  demo) demo ;;
  *)
    sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'
    [[ -z ${1:-} || ${1:-} == -h || ${1:-} == --help ]] || exit 2
    ;;
esac
