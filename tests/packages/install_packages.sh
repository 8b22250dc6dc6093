#!/usr/bin/env bash
# package.install: the packages package.build made, installed with apt into a clean Debian root
# (mmdebstrap, this machine's release), their dependencies from Debian's mirror, as a site
# installs them. Nothing of the build tree is in the root: only the .deb files are copied in.
#  - every installed program finds its libraries and runs; safectl checks the shipped safe.yaml;
#  - the SPANK plugin loads into the installed Slurm (srun --help shows --safe-*), from the
#    plugstack line `safectl render-slurm` writes, put where docs/install.md says;
#  - no unit is enabled by the install;
#  - an admin's safe.yaml survives a reinstall; `apt remove` keeps it, a purge removes it.
# (Running a cluster from the installed files is not done here yet.)
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
debs=${SAFE_TEST_PACKAGES:?SAFE_TEST_PACKAGES names the directory package.build filled}
compgen -G "$debs/safe-common_*.deb" >/dev/null || fail "no packages in $debs: package.build makes them"
command -v mmdebstrap >/dev/null || fail "mmdebstrap not found (apt-get install mmdebstrap)"
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
root=$(mktemp -d /var/tmp/safe-package-root.XXXXXX)
cache=/var/cache/safe/$codename-package-apt
cleanup() {
    local m
    for m in "$root/var/cache/apt/archives" "$root/proc"; do
        if mountpoint -q "$m"; then umount "$m" || umount -l "$m"; fi
    done
    rm -rf --one-file-system "$root"
}
trap cleanup EXIT

t0=$SECONDS
mmdebstrap --quiet --variant=apt "$codename" "$root" ${SAFE_DEBIAN_MIRROR:+"$SAFE_DEBIAN_MIRROR"}
# What apt downloads is kept for the next run; no daemon a package installs is started in the root.
mkdir -p "$cache/partial"
mount --bind "$cache" "$root/var/cache/apt/archives"
mount -t proc proc "$root/proc"
rm -f "$root/etc/apt/apt.conf.d/docker-clean"
echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >"$root/etc/apt/apt.conf.d/10safe-keep-debs"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
mkdir -p "$root/tmp/debs"
cp "$debs"/safe-common_*.deb "$debs"/safe-slurm-plugins_*.deb "$debs"/safe-node_*.deb "$debs"/safed_*.deb \
    "$debs"/safe-kube-bridge_*.deb "$debs"/safectl_*.deb "$root/tmp/debs/"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
# mmdebstrap leaves no package lists behind.
in_root apt-get update -qq >"$root/tmp/apt.log" 2>&1 || fail "apt-get update in the root failed: $(tail -n 20 "$root/tmp/apt.log")"
debs_in_root=()
for deb in "$root"/tmp/debs/*.deb; do debs_in_root+=("/tmp/debs/${deb##*/}"); done
in_root apt-get install -y -qq "${debs_in_root[@]}" >>"$root/tmp/apt.log" 2>&1 || fail "apt-get install of the packages failed: $(tail -n 20 "$root/tmp/apt.log")"
echo "installed into a clean $codename root in $((SECONDS - t0)) s"
assert_eq "$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)" "$(in_root dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins 2>/dev/null || true)" \
    "the Slurm apt chose for safe-slurm-plugins (the one it was built against)"

# Every program finds its libraries and runs.
for program in /usr/sbin/safed /usr/sbin/safe-kube-bridge /usr/sbin/safe-healthcheck /usr/sbin/safe-prolog \
    /usr/sbin/safe-epilog /usr/sbin/safe-kube-node /usr/bin/safectl; do
    missing=$(in_root ldd "$program" | grep 'not found' || true)
    [[ -z $missing ]] || fail "$program: libraries not found in the installed root: $missing"
done
in_root safed --help >/dev/null || fail "safed --help failed in the installed root"
in_root safe-healthcheck --help >/dev/null || fail "safe-healthcheck --help failed in the installed root"
out=$(in_root safectl config check /etc/safe/safe.yaml 2>&1) || fail "safectl config check of the shipped safe.yaml: $out"

# The SPANK plugin in the installed Slurm: a minimal slurm.conf (srun --help reads plugstack.conf
# and loads the plugins; it needs no slurmctld), SaFE's plugstack line where docs/install.md puts it.
cat >"$root/etc/slurm/slurm.conf" <<'CONF'
ClusterName=pkgtest
SlurmctldHost=localhost
NodeName=n1 CPUs=1
PartitionName=p Nodes=n1 Default=YES
CONF
in_root safectl render-slurm --out /tmp/fragments >/dev/null
cp "$root/tmp/fragments/plugstack-safe.conf" "$root/etc/slurm/plugstack.conf.d/safe.conf"
help=$(in_root srun --help 2>&1) || fail "srun --help failed with SaFE's plugstack line: $help"
assert_contains "$help" "--safe-retries" "srun --help in the installed root"
# safectl doctor there (no Slurm daemon runs: slurmctld's checks fail): it reads the installed
# plugins' releases from the files, linked with BIND_NOW by Debian's hardening so that they cannot
# be loaded outside Slurm, and Debian's Slurm calls itself slurm-wlm in `sbatch --version`.
doctor=$(in_root safectl doctor --json 2>&1 || true)
versions=$(jq -r '.checks[] | select(.name == "versions") | "\(.verdict) \(.detail)"' <<<"$doctor") ||
    fail "safectl doctor --json in the installed root printed no JSON: $doctor"
assert_eq "ok Slurm $(in_root sbatch --version | awk '{print $2}') here, SaFE built for it, 2 plugins of that release" "$versions" \
    "safectl doctor's versions check in the installed root"

# Installed disabled: no unit of ours is wanted by any target (the root has no systemctl; an
# enabled unit is a link in /etc/systemd/system/*.wants/).
enabled=$(find "$root/etc/systemd/system" -name 'safe*' 2>/dev/null | sed "s|^$root||" || true)
[[ -z $enabled ]] || fail "the install enabled units: $enabled"

# The admin's safe.yaml: kept over a reinstall and a remove, gone with a purge.
echo "# changed by the admin" >>"$root/etc/safe/safe.yaml"
in_root apt-get install -y -qq --reinstall "$(printf '%s\n' "${debs_in_root[@]}" | grep /safe-common_)" >>"$root/tmp/apt.log" 2>&1 || fail "reinstalling safe-common failed"
grep -q '^# changed by the admin$' "$root/etc/safe/safe.yaml" || fail "a reinstall of safe-common replaced the admin's safe.yaml"
in_root apt-get remove -y -qq safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl >>"$root/tmp/apt.log" 2>&1 ||
    fail "apt-get remove failed: $(tail -n 20 "$root/tmp/apt.log")"
[[ ! -e $root/usr/sbin/safed && ! -e $root/usr/bin/safectl ]] || fail "apt-get remove left the programs"
grep -q '^# changed by the admin$' "$root/etc/safe/safe.yaml" || fail "apt-get remove took the admin's safe.yaml"
# Removed packages that came from files, not a repository, are purged with dpkg (apt does the
# same for packages from a repository).
in_root dpkg --purge safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl >>"$root/tmp/apt.log" 2>&1 ||
    fail "dpkg --purge failed: $(tail -n 20 "$root/tmp/apt.log")"
[[ ! -e $root/etc/safe ]] || fail "apt-get purge left $(find "$root/etc/safe" | sed "s|^$root||" | tr '\n' ' ')"
echo "PASS: install_packages (apt install into a clean $codename root, programs run, SPANK plugin loads into its Slurm, units disabled, safe.yaml kept until purge)"
