#!/usr/bin/env bash
# SaFE for Slurm: set up a machine, build, test, or run the demo.
#
#   ./bootstrap.sh deps    install the Debian packages the project needs (apt-get)
#   ./bootstrap.sh build   deps + configure + build (build/)
#   ./bootstrap.sh test    deps + build + the whole test suite (unit and integration); further
#                          arguments go to ctest (e.g. -L failover)
#   ./bootstrap.sh demo    deps + build + a local 4-node Slurm cluster with SaFE and a demo job
#   ./bootstrap.sh package deps + the Debian packages, checked with lintian, in build/packages/
#                          (docs/install.md); --rpm also builds the RPMs
#
# Environment: SAFE_SANITIZE=address,undefined builds into build-asan/ with sanitizers and tests
# that build; SAFE_BUILD_DIR overrides the build directory; SAFE_DEMO_DIR the demo cluster's.
# SAFE_SLURM_SOURCE=slurm-X.tar.gz builds that Slurm once into a cache (SAFE_SLURM_CACHE, default
# /var/cache/safe/slurm, keyed by the tarball's checksum) and builds and tests SaFE against it
# (build-slurm-X-SUM/) instead of Debian's Slurm; SAFE_SLURM_PREFIX does the same for a Slurm already
# installed under a prefix.
set -euo pipefail

SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
SANITIZE=${SAFE_SANITIZE:-}
BUILD_DIR=${SAFE_BUILD_DIR:-$SOURCE_DIR/build${SANITIZE:+-asan}}
DEMO_DIR=${SAFE_DEMO_DIR:-/tmp/safe-demo}
SLURM_SOURCE=${SAFE_SLURM_SOURCE:-}
SLURM_PREFIX=${SAFE_SLURM_PREFIX:-}
SLURM_CACHE=${SAFE_SLURM_CACHE:-/var/cache/safe/slurm}

# Every Debian package the project needs, in one place. Debian 12 (bookworm) and 13 (trixie) name
# a few differently: the fuzzing toolchain, and trixie's slurm-wlm no longer pulls the JWT plugin
# the REST bridge's Slurm authentication needs.
PACKAGES=(
  # toolchain (ccache: CI builds the same tree against several Slurm releases, and most of it does
  # not include Slurm's headers)
  cmake g++ make pkg-config ccache
  # Slurm and munge: daemons for the local cluster, headers and libraries to build against
  slurm-wlm slurmctld slurmd slurm-client libslurm-dev munge libmunge-dev
  # libraries
  libyaml-dev libjansson-dev libhwloc-dev librocm-smi-dev libcurl4-openssl-dev libspdlog-dev
  libboost-program-options-dev libsqlite3-dev libmicrohttpd-dev libjwt-dev libssl-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev jq wrk procps iproute2 util-linux libfaketime shellcheck curl python3 openssl
  # the Python helper for trainers (python/) installs with pip into a virtual environment, offline
  python3-venv python3-setuptools python3-wheel
  # safed's leadership (controller.ha) is tested against a real etcd the test starts
  etcd-server
  # the alerting rules and dashboards (etc/prometheus, etc/grafana) are tested with promtool and a
  # real Prometheus scraping safed, the bridge and a node_exporter
  prometheus prometheus-node-exporter
  # systemd-analyze checks the shipped units (systemd need not be PID 1); man checks the man pages
  systemd man-db
  # the packages (./bootstrap.sh package; the test suite builds and checks them)
  debhelper lintian rpm git mmdebstrap
)
release_packages() {
  local codename
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  case $codename in
    # python3-torch (1.13): the real PyTorch job's test (integration.failover_torch_ddp), and
    # chromium: the web console's browser test (integration.console_browser), both of which CI
    # runs on Debian 12 only (elsewhere they skip without them)
    bookworm) PACKAGES+=(clang-14 libfuzzer-14-dev python3-torch chromium) ;;
    trixie) PACKAGES+=(clang libfuzzer-19-dev libclang-rt-19-dev slurm-wlm-jwt-plugin) ;;
    *) die "this machine runs $(. /etc/os-release && echo "${PRETTY_NAME:-an unknown system}"); the project installs its packages on Debian 12 (bookworm) or 13 (trixie)" ;;
  esac
}

log() { printf '==> %s\n' "$*"; }
die() { printf 'bootstrap: %s\n' "$*" >&2; exit 1; }

deps() {
  local missing=() pkg
  release_packages
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

# Builds the Slurm in $SLURM_SOURCE (a release tarball) into the cache, once per tarball and build
# recipe, and sets SLURM_PREFIX to it. A build that did not finish leaves no .complete and is redone.
# --enable-multiple-slurmd: the test cluster runs several slurmd on one host, as Debian's does.
# slurmrestd and static libraries are not needed by SaFE or its tests. json-c gives slurmctld the
# JSON serializer that auth/jwt needs, http-parser its HTTP endpoints (25.11 and later).
SLURM_CONFIGURE=(--enable-multiple-slurmd --disable-slurmrestd --disable-debug --disable-static)
SLURM_BUILD_PACKAGES=(libjson-c-dev libhttp-parser-dev)
slurm_from_source() {
  [[ -f $SLURM_SOURCE ]] || die "SAFE_SLURM_SOURCE=$SLURM_SOURCE: no such file (a Slurm release tarball)"
  local sum recipe name prefix work
  sum=$(sha256sum "$SLURM_SOURCE" | cut -c1-16)
  recipe=$(printf '%s\n' "${SLURM_CONFIGURE[@]}" "${SLURM_BUILD_PACKAGES[@]}" | sha256sum | cut -c1-6)
  name=$(basename "$SLURM_SOURCE" .tar.gz)
  prefix=$SLURM_CACHE/$name-$sum-$recipe
  SLURM_PREFIX=$prefix
  [[ -f $prefix/.complete ]] && return 0
  [[ $(id -u) == 0 ]] || die "building Slurm into $SLURM_CACHE needs root: sudo $0 build"
  local missing=() pkg
  for pkg in "${SLURM_BUILD_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    log "installing what building Slurm needs: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  log "building $name into $prefix (once; about 6 minutes on 2 cores)"
  rm -rf "$prefix"
  work=$(mktemp -d)
  tar -xzf "$SLURM_SOURCE" -C "$work"
  (cd "$work"/*/ && ./configure --prefix="$prefix" --sysconfdir="$prefix/etc" "${SLURM_CONFIGURE[@]}" \
      >"$work/configure.log" 2>&1 && make -j"$(nproc)" >"$work/make.log" 2>&1 && make install >"$work/install.log" 2>&1) ||
    { tail -n 30 "$work"/*.log >&2; die "building $name failed; logs in $work"; }
  rm -rf "$work"
  touch "$prefix/.complete"
}

build() {
  deps
  [[ -n $SLURM_SOURCE ]] && slurm_from_source
  if [[ -n $SLURM_PREFIX && -z ${SAFE_BUILD_DIR:-} ]]; then
    local name
    name=$(basename "$SLURM_PREFIX")
    [[ $name == slurm-* ]] || name=slurm-$name
    BUILD_DIR=$SOURCE_DIR/build-$name${SANITIZE:+-asan}
  fi
  local args=(-S "$SOURCE_DIR" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSAFE_WERROR=ON)
  [[ -n $SANITIZE ]] && args+=("-DSAFE_SANITIZE=$SANITIZE")
  [[ -n $SLURM_PREFIX ]] && args+=("-DSAFE_SLURM_PREFIX=$SLURM_PREFIX")
  command -v ccache >/dev/null && args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
  log "configuring in $BUILD_DIR"
  cmake "${args[@]}" >/dev/null
  log "building"
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}

run_tests() {
  build
  [[ $(id -u) == 0 ]] || die "the integration tests start Slurm daemons and need root: sudo $0 test"
  log "running the test suite"
  # Two at a time: most tests wait on Slurm's and SaFE's timers, not on the CPU. Tests that break
  # the shared cluster's nodes take turns (RESOURCE_LOCK), the goodput benchmark runs alone.
  ctest --test-dir "$BUILD_DIR" --output-on-failure --timeout 600 -j 2 "$@"
}

demo() {
  build
  [[ $(id -u) == 0 ]] || die "the demo starts Slurm daemons and needs root: sudo $0 demo"
  exec "$SOURCE_DIR/tests/demo/run" --dir "$DEMO_DIR" --build-dir "$BUILD_DIR"
}

package() {
  deps
  exec "$SOURCE_DIR/packaging/build" --out "$SOURCE_DIR/build/packages" "$@"
}

case "${1:-}" in
  deps) deps ;;
  package) shift; package "$@" ;;
  build) build ;;
  test) shift; run_tests "$@" ;;
  demo) demo ;;
  *)
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    [[ -z ${1:-} || ${1:-} == -h || ${1:-} == --help ]] || exit 2
    ;;
esac
