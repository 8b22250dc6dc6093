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
#  - `apt remove` warns of a plugstack line still naming the SPANK plugin;
#  - an admin's safe.yaml survives a reinstall; `apt remove` keeps it, a purge removes it, and
#    safed's state in /var/lib/safe.
# The test harness (safe-cluster, its sample safe.yaml) is copied in; no program or library of
# the build tree is (the build tree is not mounted, and the root has no copy of it).
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=clean_root.sh
source "$(dirname "$0")/clean_root.sh"
debs=${SAFE_TEST_PACKAGES:?SAFE_TEST_PACKAGES names the directory package.build filled}
compgen -G "$debs/safe-common_*.deb" >/dev/null || fail "no packages in $debs: package.build makes them"

t0=$SECONDS
make_clean_root
install_debs "$debs"
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

t1=$SECONDS
clean_root_cluster_up --nodes 2 --gpus-per-node 2
echo "cluster from the installed files up in $((SECONDS - t1)) s"
pids=$(in_root "$harness" pids --dir "$cdir")
for daemon in "/usr/sbin/safed --config /etc/safe/safe.yaml" "/usr/sbin/safe-kube-bridge --config /etc/safe/safe.yaml"; do
    grep -qE "^[0-9]+ $daemon\$" <<<"$pids" || fail "no '$daemon' (its unit's ExecStart) among the cluster's processes: $pids"
done
# slurmctld loaded the installed job_submit plugin, from Slurm's plugin directory.
ctld_pid=$(awk '$2 ~ /(^|\/)slurmctld$/ { print $1 }' <<<"$pids")
plugin=$(in_root dpkg -L safe-slurm-plugins | grep '/job_submit_safe.so$')
grep -q "$plugin\$" "/proc/$ctld_pid/maps" || fail "slurmctld (pid '$ctld_pid') has not loaded $plugin"
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
in_root "${apt_install[@]}" --reinstall "$(printf '%s\n' "${debs_in_root[@]}" | grep /safe-common_)" >>"$root/tmp/apt.log" 2>&1 || fail "reinstalling safe-common failed"
grep -q '^# changed by the admin$' "$root/etc/safe/safe.yaml" || fail "a reinstall of safe-common replaced the admin's safe.yaml"
lines_before=$(wc -l <"$root/tmp/job.out")
# The plugstack line an admin would have left in: the plugins' prerm warns of it.
cp "$root/tmp/fragments/plugstack-safe.conf" "$root/etc/slurm/plugstack.conf.d/safe.conf"
# ...and one that only mentions them in a comment: no warning for that one.
sed 's/^/# /' "$root/tmp/fragments/plugstack-safe.conf" >"$root/etc/slurm/plugstack.conf.d/old-safe.conf"
in_root apt-get remove -y -qq safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl >"$root/tmp/remove.log" 2>&1 ||
    fail "apt-get remove failed: $(tail -n 20 "$root/tmp/remove.log")"
assert_contains "$(cat "$root/tmp/remove.log")" "safe-slurm-plugins: warning: /etc/slurm/plugstack.conf.d/safe.conf still names spank_safe.so" \
    "apt-get remove's output"
[[ $(cat "$root/tmp/remove.log") != *old-safe.conf* ]] || fail "the prerm warned of a plugstack file that only has the plugin in a comment"
rm "$root/etc/slurm/plugstack.conf.d/old-safe.conf"
# The job is not touched: still running, not requeued, still writing.
assert_eq "RUNNING 1" "$(job_state JobState) $(job_state Restarts)" "job $job after apt-get remove"
wait_for "(( \$(wc -l <$root/tmp/job.out) > $lines_before + 2 ))" 10 "cat $root/tmp/job.out"
in_cluster "scancel $job"
in_root "$harness" down --dir "$cdir" >/dev/null || fail "safe-cluster down in the root failed"
[[ ! -e $root/usr/sbin/safed && ! -e $root/usr/bin/safectl ]] || fail "apt-get remove left the programs"
grep -q '^# changed by the admin$' "$root/etc/safe/safe.yaml" || fail "apt-get remove took the admin's safe.yaml"
# Removed packages that came from files, not a repository, are purged with dpkg (apt does the
# same for packages from a repository).
in_root dpkg --purge safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl >>"$root/tmp/apt.log" 2>&1 ||
    fail "dpkg --purge failed: $(tail -n 20 "$root/tmp/apt.log")"
[[ ! -e $root/etc/safe ]] || fail "apt-get purge left $(find "$root/etc/safe" | sed "s|^$root||" | tr '\n' ' ')"
# safed's store (the cluster's safed kept it there) goes with the purge too.
[[ ! -e $root/var/lib/safe ]] || fail "the purge left $(find "$root/var/lib/safe" | sed "s|^$root||" | tr '\n' ' ')"
echo "PASS: install_packages (apt install into a clean $codename root, programs run, SPANK plugin loads into its Slurm, units disabled, a cluster from the installed files fails a job over, apt remove leaves it running, safe.yaml kept until purge)"
