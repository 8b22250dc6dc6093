#!/usr/bin/env bash
# package.install: the packages package.build made, installed with apt into a clean Debian root
# (mmdebstrap, this machine's release), their dependencies from Debian's mirror, as a site
# installs them. Nothing of the build tree is in the root: only the .deb files are copied in.
#  - every installed program finds its libraries and runs; safectl checks the shipped safe.yaml;
#  - the SPANK plugin loads into the installed Slurm (srun --help shows --safe-*), from the
#    plugstack line `safectl render-slurm` writes, put where docs/install.md says;
#  - no unit is enabled by the install;
#  - a Slurm cluster runs from the installed files only (`safe-cluster up --installed`: Debian's
#    slurmctld and slurmd, SaFE's plugins from Slurm's plugin directory, /etc/safe/safe.yaml, safed
#    and the bridge started with their units' ExecStart lines), and a SaFE job survives a GPU
#    fault there: the health checker drains its node, safed requeues it, it runs again elsewhere;
#  - `apt remove` leaves a running job alone;
#  - an admin's safe.yaml survives a reinstall; `apt remove` keeps it, a purge removes it.
# The test harness (safe-cluster, its sample safe.yaml) is copied in; no program or library of
# the build tree is (the build tree is not mounted, and the root has no copy of it).
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
debs=${SAFE_TEST_PACKAGES:?SAFE_TEST_PACKAGES names the directory package.build filled}
compgen -G "$debs/safe-common_*.deb" >/dev/null || fail "no packages in $debs: package.build makes them"
command -v mmdebstrap >/dev/null || fail "mmdebstrap not found (apt-get install mmdebstrap)"
codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
root=$(mktemp -d /var/tmp/safe-package-root.XXXXXX)
cache=/var/cache/safe/$codename-package-apt
# Processes whose root directory is the clean root: the cluster's daemons and jobs.
root_pids() {
    local p
    for p in /proc/[0-9]*; do
        [[ $(readlink "$p/root" 2>/dev/null) == "$root" ]] && echo "${p#/proc/}"
    done
    return 0
}
cleanup() {
    local m
    if [[ -x $root/tmp/harness/cluster/safe-cluster ]]; then in_root /tmp/harness/cluster/safe-cluster down-all >/dev/null 2>&1 || true; fi
    # shellcheck disable=SC2046 # one pid per word
    kill -KILL $(root_pids) 2>/dev/null || true
    for m in "$root/tmp/safe-cluster.lock" "$root/sys" "$root/dev" "$root/var/cache/apt/archives" "$root/proc"; do
        if mountpoint -q "$m"; then umount -R "$m" || umount -R -l "$m"; fi
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

# A cluster from the installed files. Debian's Slurm daemons, munge and the harness's tools
# (ss, ps, curl, jq) come from the mirror; the harness and its sample config are copied in.
# The cluster's ports are picked under the host's lock (bind-mounted) so that no cluster of the
# host picks the same ones at once.
in_root apt-get install -y -qq slurmctld slurmd munge iproute2 procps curl jq >>"$root/tmp/apt.log" 2>&1 ||
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
cdir=/tmp/c
t1=$SECONDS
up=$(in_root /tmp/harness/cluster/safe-cluster up --installed --dir "$cdir" --nodes 2 --gpus-per-node 2 --config /tmp/harness/cluster/safe.yaml 2>&1) ||
    fail "safe-cluster up --installed in the root failed: $up"
echo "cluster from the installed files up in $((SECONDS - t1)) s"
# in_cluster COMMAND: a bash command line run in the root with the cluster's environment.
in_cluster() { in_root bash -c ". $cdir/env && $1"; }
pids=$(in_root /tmp/harness/cluster/safe-cluster pids --dir "$cdir")
for daemon in "/usr/sbin/safed --config /etc/safe/safe.yaml" "/usr/sbin/safe-kube-bridge --config /etc/safe/safe.yaml"; do
    grep -qE "^[0-9]+ $daemon\$" <<<"$pids" || fail "no '$daemon' (its unit's ExecStart) among the cluster's processes: $pids"
done
assert_eq /etc/safe/safe.yaml "$(in_cluster 'scontrol show config' | sed -n 's|^JobSubmitPlugins *= *safe$|/etc/safe/safe.yaml|p')" \
    "job_submit/safe loaded by the installed slurmctld"
printf '#!/bin/bash\nwhile :; do echo "run ${SLURM_RESTART_COUNT:-0} on $SLURMD_NODENAME"; sleep 1; done\n' >"$root/tmp/job.sh"
chmod 0755 "$root/tmp/job.sh"
job=$(in_cluster "sbatch --parsable -N1 --safe-retries=1 -o /tmp/job.out /tmp/job.sh") || fail "sbatch --safe-retries in the root: $job"
job_state() { in_cluster "scontrol show job $job" | grep -oE "(^| )$1=[^ ]*" | cut -d= -f2; }
wait_for '[[ $(job_state JobState) == RUNNING ]]' 30 "in_cluster 'scontrol show job $job'"
node=$(job_state NodeList)
t2=$SECONDS
in_cluster "safectl inject --node $node --gpu 0 --fault ecc" >/dev/null || fail "safectl inject in the root failed"
wait_for '[[ $(job_state JobState) == RUNNING && $(job_state Restarts) == 1 ]]' 90 \
    "in_cluster 'scontrol show job $job; scontrol show node $node; tail -n 20 $cdir/log/safed.out'"
echo "job $job ran again $((SECONDS - t2)) s after a GPU fault on $node"
[[ $(job_state NodeList) != "$node" ]] || fail "job $job ran again on the faulty node $node"
assert_contains "$(in_cluster "scontrol show node $node")" "Reason=SaFE: gpu0" "the drained node"
assert_contains "$(in_cluster "safectl job $job" 2>&1)" "node_fault" "safed's record of job $job"

# Installed disabled: no unit of ours is wanted by any target (the root has no systemctl; an
# enabled unit is a link in /etc/systemd/system/*.wants/).
enabled=$(find "$root/etc/systemd/system" -name 'safe*' 2>/dev/null | sed "s|^$root||" || true)
[[ -z $enabled ]] || fail "the install enabled units: $enabled"

# The admin's safe.yaml: kept over a reinstall and a remove, gone with a purge.
echo "# changed by the admin" >>"$root/etc/safe/safe.yaml"
in_root apt-get install -y -qq --reinstall "$(printf '%s\n' "${debs_in_root[@]}" | grep /safe-common_)" >>"$root/tmp/apt.log" 2>&1 || fail "reinstalling safe-common failed"
grep -q '^# changed by the admin$' "$root/etc/safe/safe.yaml" || fail "a reinstall of safe-common replaced the admin's safe.yaml"
lines_before=$(wc -l <"$root/tmp/job.out")
in_root apt-get remove -y -qq safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl >>"$root/tmp/apt.log" 2>&1 ||
    fail "apt-get remove failed: $(tail -n 20 "$root/tmp/apt.log")"
# The job is not touched: still running, not requeued, still writing.
assert_eq "RUNNING 1" "$(job_state JobState) $(job_state Restarts)" "job $job after apt-get remove"
wait_for "(( \$(wc -l <$root/tmp/job.out) > $lines_before + 2 ))" 10 "cat $root/tmp/job.out"
in_cluster "scancel $job"
in_root /tmp/harness/cluster/safe-cluster down --dir "$cdir" >/dev/null || fail "safe-cluster down in the root failed"
[[ ! -e $root/usr/sbin/safed && ! -e $root/usr/bin/safectl ]] || fail "apt-get remove left the programs"
grep -q '^# changed by the admin$' "$root/etc/safe/safe.yaml" || fail "apt-get remove took the admin's safe.yaml"
# Removed packages that came from files, not a repository, are purged with dpkg (apt does the
# same for packages from a repository).
in_root dpkg --purge safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl >>"$root/tmp/apt.log" 2>&1 ||
    fail "dpkg --purge failed: $(tail -n 20 "$root/tmp/apt.log")"
[[ ! -e $root/etc/safe ]] || fail "apt-get purge left $(find "$root/etc/safe" | sed "s|^$root||" | tr '\n' ' ')"
echo "PASS: install_packages (apt install into a clean $codename root, programs run, SPANK plugin loads into its Slurm, units disabled, a cluster from the installed files fails a job over, apt remove leaves it running, safe.yaml kept until purge)"
