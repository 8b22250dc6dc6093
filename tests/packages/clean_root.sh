# shellcheck shell=bash
# clean_root.sh: a clean Debian root (mmdebstrap, this machine's release, Debian's mirror) for the
# package tests, sourced after tests/lib/cluster_test.sh. The packages are installed into it with
# apt as a site installs them, and a Slurm cluster can run in it from the installed files only:
# the test harness (tests/cluster, tests/lib) is copied in, nothing of the build tree is.
#   make_clean_root               a root ($root), removed with everything in it at exit; a test
#                                 of two hosts makes two and sets $root to the one it works in
#   in_root COMMAND...            runs COMMAND in the root with a clean environment
#   install_debs DIR [APT_ARGS]   copies DIR's SaFE packages in (the six, or those named in
#                                 $host_packages) and apt-installs them
#   clean_root_cluster_up ARGS    `safe-cluster up --installed --dir $cdir ARGS` in the root
#   node_host NODE_ROOT           makes NODE_ROOT the cluster's compute host (up --node-root)
#   in_cluster 'COMMAND LINE'     a bash command line in the root with the cluster's environment
#   upgrade_from_debs             where package.build_upgrade_from keeps the earlier packages

codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
# The cluster's directory is named after the test: `safe-cluster pids` and `down` find a
# cluster's processes by it in the host's /proc, where every root's processes are.
cdir=/tmp/safe-installed-$(basename "$0" .sh)
harness=/tmp/harness/cluster/safe-cluster
# apt-get in the root: never asks (a conffile the admin changed stays), and never removes a
# package to install another (a test that would need that fails instead).
apt_install=(apt-get install -y -qq --no-remove -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
in_cluster() { in_root bash -c ". $cdir/env && $1"; }

# Processes whose root directory is the clean root or below it (a compute host's root mounted
# into it): the cluster's daemons and jobs.
root_pids() {
    local p r
    for p in /proc/[0-9]*; do
        r=$(readlink "$p/root" 2>/dev/null) || continue
        [[ $r == "$root" || $r == "$root"/* ]] && echo "${p#/proc/}"
    done
    return 0
}
# The clean roots, in the order made. At exit every root's cluster is stopped and its processes
# killed, then every root unmounted, then removed.
clean_roots=()
remove_clean_roots() {
    for root in "${clean_roots[@]}"; do
        if [[ -x $root$harness ]]; then in_root "$harness" down-all >/dev/null 2>&1 || true; fi
    done
    for root in "${clean_roots[@]}"; do
        # shellcheck disable=SC2046 # one pid per word
        kill -KILL $(root_pids) 2>/dev/null || true
    done
    # A directory another root has a mount on (node_host) cannot be removed: every root's mounts
    # go before any root's files.
    for root in "${clean_roots[@]}"; do unmount_under "$root"; done
    # A mount left (said above) keeps its root: rm would empty what is mounted there.
    for root in "${clean_roots[@]}"; do
        [[ -n $(mounts_under "$root") ]] || rm -rf --one-file-system "$root"
    done
}
# unmount_under DIR: every mount at or below DIR, the deepest first; mounts stacked on one path
# (a root mounted into another brings its mounts along) take a round each.
mounts_under() { findmnt -rn -o TARGET | awk -v d="$1" '$0 == d || index($0, d "/") == 1' | sort -ru; }
unmount_under() {
    local m round
    for ((round = 0; round < 10; round++)); do
        [[ -n $(mounts_under "$1") ]] || return 0
        while read -r m; do
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
        done < <(mounts_under "$1")
    done
    echo "clean_root.sh: mounts left under $1: $(mounts_under "$1" | tr '\n' ' ')" >&2
}

make_clean_root() {
    command -v mmdebstrap >/dev/null || fail "mmdebstrap not found (apt-get install mmdebstrap)"
    root=$(realpath "$(mktemp -d /var/tmp/safe-package-root.XXXXXX)")
    clean_roots+=("$root")
    trap remove_clean_roots EXIT
    local cache=/var/cache/safe/$codename-package-apt
    mmdebstrap --quiet --variant=apt "$codename" "$root" ${SAFE_DEBIAN_MIRROR:+"$SAFE_DEBIAN_MIRROR"}
    # What apt downloads is kept for the next run; no daemon a package installs is started in the root.
    mkdir -p "$cache/partial"
    mount --bind "$cache" "$root/var/cache/apt/archives"
    mount -t proc proc "$root/proc"
    rm -f "$root/etc/apt/apt.conf.d/docker-clean"
    echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/10safe-keep-debs"
    printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
    chmod 0755 "$root/usr/sbin/policy-rc.d"
    # mmdebstrap leaves no package lists behind.
    in_root apt-get update -qq >"$root/tmp/apt.log" 2>&1 || fail "apt-get update in the root failed: $(tail -n 20 "$root/tmp/apt.log")"
}

# install_debs DIR [APT_ARGS...]: SaFE's packages from DIR (the six, or those $host_packages
# names), copied into the root (/tmp/debs-N, a directory per call) and installed with apt-get
# install, dependencies from Debian. Sets debs_in_root to their paths in the root.
all_packages=(safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl)
install_debs() {
    local dir=$1 deb to
    shift
    to=/tmp/debs-$((++install_debs_calls))
    mkdir -p "$root$to"
    debs_in_root=()
    for deb in "${host_packages[@]:-${all_packages[@]}}"; do
        compgen -G "$dir/${deb}_*.deb" >/dev/null || fail "no $deb package in $dir"
        cp "$dir/${deb}"_*.deb "$root$to/"
        debs_in_root+=("$to/$(basename "$dir/${deb}"_*.deb)")
    done
    in_root "${apt_install[@]}" "$@" "${debs_in_root[@]}" >>"$root/tmp/apt.log" 2>&1 ||
        fail "apt-get install ${*:+$* }of the packages in $dir failed: $(tail -n 20 "$root/tmp/apt.log")"
}
install_debs_calls=0

# clean_root_cluster_up ARGS...: a cluster from the installed files. Debian's Slurm daemons, munge
# and the harness's tools (ss, ps, curl, jq, sqlite3) come from the mirror; the harness and its
# sample config are copied in. The cluster's ports are picked under the host's lock
# (bind-mounted), so that no cluster of the host picks the same ones at once.
clean_root_cluster_up() {
    in_root "${apt_install[@]}" slurmctld slurmd munge iproute2 procps curl jq sqlite3 >>"$root/tmp/apt.log" 2>&1 ||
        fail "apt-get install of Slurm's daemons in the root failed: $(tail -n 20 "$root/tmp/apt.log")"
    # /sys with the cgroup file system under it: Slurm 22.05's slurmd initializes its cgroup plugin.
    mount --rbind /dev "$root/dev"
    mount --make-rslave "$root/dev"
    mount --rbind /sys "$root/sys"
    mount --make-rslave "$root/sys"
    touch /tmp/safe-cluster.lock "$root/tmp/safe-cluster.lock"
    mount --bind /tmp/safe-cluster.lock "$root/tmp/safe-cluster.lock"
    mkdir -p "$root/tmp/harness"
    cp -r "$SAFE_SOURCE_DIR/tests/cluster" "$SAFE_SOURCE_DIR/tests/lib" "$root/tmp/harness/"
    rm -f "$root/etc/slurm/plugstack.conf.d/safe.conf"  # the cluster has its own plugstack.conf
    local up
    up=$(in_root "$harness" up --installed --dir "$cdir" --config /tmp/harness/cluster/safe.yaml "$@" 2>&1) ||
        fail "safe-cluster up --installed in the root failed: $up"
}

# node_host NODE_ROOT: NODE_ROOT (a clean root with SaFE's node packages) becomes the compute host
# of the cluster clean_root_cluster_up starts in $root with `--node-root /node-host`: Slurm's
# slurmd installed there; the cluster's directory and munge's socket directory are $root's (a
# site's shared file system and the host's munged, on one machine); and NODE_ROOT is mounted at
# $root/node-host, where the harness finds it. Call it after installing the packages in both.
node_host() {
    local node_root=$1
    root=$node_root in_root "${apt_install[@]}" slurmd munge procps >>"$node_root/tmp/apt.log" 2>&1 ||
        fail "apt-get install of slurmd in the node root failed: $(tail -n 20 "$node_root/tmp/apt.log")"
    mount --rbind /dev "$node_root/dev"
    mount --make-rslave "$node_root/dev"
    mount --rbind /sys "$node_root/sys"
    mount --make-rslave "$node_root/sys"
    local d
    for d in "$cdir" /run/munge /tmp/jobs; do
        mkdir -p "$root$d" "$node_root$d"
        mount --bind "$root$d" "$node_root$d"
    done
    mkdir -p "$root/node-host"
    mount --rbind "$node_root" "$root/node-host"
    mount --make-rslave "$root/node-host"
}

# upgrade_from_debs: the directory of the packages of the commit package.upgrade upgrades from:
# SAFE_UPGRADE_FROM, by default the last commit CI landed before `safectl doctor` (built once per
# commit, Debian release and Slurm version, the one their plugins are pinned to: they never change).
upgrade_from_debs() {
    local from slurm
    from=$(git -C "$SAFE_SOURCE_DIR" rev-parse --verify -q "${SAFE_UPGRADE_FROM:-c2940c8}^{commit}") ||
        fail "SAFE_UPGRADE_FROM=${SAFE_UPGRADE_FROM:-c2940c8}: no such commit in $SAFE_SOURCE_DIR"
    slurm=$(dpkg-query -W -f='${Version}' libslurm-dev | tr -c 'A-Za-z0-9.+~\n-' '_')
    echo "/var/cache/safe/upgrade-from/$from-$codename-slurm$slurm"
}
