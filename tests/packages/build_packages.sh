#!/usr/bin/env bash
# package.build: the Debian packages and the RPMs, built from this tree as `./bootstrap.sh
# package` builds them (packaging/build --rpm), hold what docs/install.md says they hold: each
# program in the package of the host that runs it, safe.yaml a conffile, units that start nothing
# on install, the plugins pinned to exactly the Slurm they were built against, man pages, and
# lintian with neither errors nor warnings.
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
# Left in SAFE_TEST_PACKAGES for package.install.
out=${SAFE_TEST_PACKAGES:?SAFE_TEST_PACKAGES names the directory to build into}
rm -rf "$out"
mkdir -p "$out"
"$SAFE_SOURCE_DIR/packaging/build" --out "$out" --rpm

# files PACKAGE: the package's files (no directories), docs and changelogs left out.
files() {
    dpkg-deb -c "$out/$1"_*.deb | awk '{ print $6 }' | grep -v '/$' | grep -v '^\./usr/share/doc/' | sed 's|^\./|/|' | sort | tr '\n' ' '
}
# Units where this release's debhelper puts them (/lib on Debian 12, /usr/lib on 13).
unitdir=$(files safed | tr ' ' '\n' | sed -n 's|/safed.service$||p')
[[ $unitdir == /lib/systemd/system || $unitdir == /usr/lib/systemd/system ]] ||
    fail "safed.service is not in a systemd unit directory: $(files safed)"
plugindir=$(dpkg -L slurm-wlm-basic-plugins | grep '/select_cons_tres.so$' | xargs dirname)
assert_eq "/etc/safe/safe.yaml " "$(files safe-common)" "safe-common's files"
assert_eq "$plugindir/job_submit_safe.so $plugindir/spank_safe.so " "$(files safe-slurm-plugins)" "safe-slurm-plugins' files"
# Each program with its man page (docs/man), compressed.
man8=/usr/share/man/man8
assert_eq "$unitdir/safe-healthcheck-run.service $unitdir/safe-healthcheck-run.timer $unitdir/safe-healthcheck.service /usr/sbin/safe-epilog /usr/sbin/safe-healthcheck /usr/sbin/safe-kube-node /usr/sbin/safe-prolog $man8/safe-epilog.8.gz $man8/safe-healthcheck.8.gz $man8/safe-kube-node.8.gz $man8/safe-prolog.8.gz " \
    "$(files safe-node)" "safe-node's files"
# The controller host's package also carries the alerting rules and dashboards (docs/monitoring.md).
monitoring="/usr/share/safe/grafana/dashboards/safe-bridge.json /usr/share/safe/grafana/dashboards/safe-cluster-health.json \
/usr/share/safe/grafana/dashboards/safe-controller.json /usr/share/safe/grafana/dashboards/safe-failovers.json \
/usr/share/safe/grafana/dashboards/safe-workspaces.json /usr/share/safe/grafana/provisioning/dashboards/safe.yaml \
/usr/share/safe/grafana/provisioning/datasources/safe.yaml /usr/share/safe/prometheus/safe-alerts.yml "
assert_eq "$unitdir/safed.service /usr/sbin/safed $man8/safed.8.gz $monitoring" "$(files safed)" "safed's files"
assert_eq "$unitdir/safe-kube-bridge.service /usr/sbin/safe-kube-bridge $man8/safe-kube-bridge.8.gz " "$(files safe-kube-bridge)" "safe-kube-bridge's files"
assert_eq "/usr/bin/safectl /usr/share/man/man1/safectl.1.gz " "$(files safectl)" "safectl's files"
dpkg-deb -c "$out"/safe-common_*.deb | grep '/usr/share/doc/safe-common/admin-guide.md$' >/dev/null ||
    fail "safe-common does not ship the guides uncompressed (the units' Documentation= lines name them)"

# safe.yaml: a conffile (an upgrade keeps the admin's), the one in the tree.
ctrl=$out/ctrl
dpkg-deb -e "$out"/safe-common_*.deb "$ctrl"
assert_eq "/etc/safe/safe.yaml" "$(cat "$ctrl/conffiles")" "safe-common's conffiles"
dpkg-deb --fsys-tarfile "$out"/safe-common_*.deb | tar -xOf - ./etc/safe/safe.yaml | cmp -s - "$SAFE_SOURCE_DIR/etc/safe.yaml" ||
    fail "safe-common's /etc/safe/safe.yaml is not etc/safe.yaml"

# The daemons are installed disabled: dh_installsystemd --no-enable guards the postinst's enable
# with `debian-installed` (only units an earlier version had enabled are enabled again).
for unit in safed/safed.service safe-kube-bridge/safe-kube-bridge.service safe-node/safe-healthcheck.service \
    safe-node/safe-healthcheck-run.timer; do
    rm -rf "$ctrl"
    dpkg-deb -e "$out/${unit%/*}"_*.deb "$ctrl"
    grep -q "deb-systemd-helper debian-installed '${unit#*/}'" "$ctrl/postinst" ||
        fail "${unit%/*}'s postinst enables ${unit#*/} on a first install"
done

# The plugins: pinned to this machine's Slurm, micro included, and libyaml linked shared
# (Debian's security updates reach it).
slurm=$(dpkg-query -W -f='${Version}' slurm-wlm-basic-plugins)
depends=$(dpkg-deb -f "$out"/safe-slurm-plugins_*.deb Depends)
IFS=. read -r major minor micro <<<"${slurm%%-*}"
satisfies() {  # satisfies VERSION: whether VERSION meets every slurm-wlm-basic-plugins clause
    local clause op bound
    while read -r clause; do
        op=$(sed -E 's/.*\((<<|>=|=|<=|>>) .*/\1/' <<<"$clause")
        bound=$(sed -E 's/.*\((<<|>=|=|<=|>>) ([^)]*)\).*/\2/' <<<"$clause")
        case $op in '<<') op=lt ;; '>=') op=ge ;; '=') op=eq ;; '<=') op=le ;; '>>') op=gt ;; esac
        dpkg --compare-versions "$1" "$op" "$bound" || return 1
    done < <(tr ',' '\n' <<<"$depends" | grep 'slurm-wlm-basic-plugins (')
}
grep -q 'slurm-wlm-basic-plugins (' <<<"$depends" || fail "safe-slurm-plugins does not depend on Slurm: $depends"
satisfies "$slurm" || fail "safe-slurm-plugins ($depends) refuses this machine's Slurm $slurm"
for other in "$major.$minor.$((micro + 1))-1" "$major.$minor.$((micro - 1))-1" "$major.$((10#$minor + 6)).0-1"; do
    ! satisfies "$other" || fail "safe-slurm-plugins ($depends) accepts Slurm $other: slurmctld would refuse its plugins"
done
dpkg-deb -x "$out"/safe-slurm-plugins_*.deb "$out/plugins"
readelf -d "$out/plugins$plugindir/spank_safe.so" | grep "NEEDED.*libyaml" >/dev/null ||
    fail "the packaged SPANK plugin does not link libyaml shared"

# The version: a snapshot sorts below the release it leads to (dpkg and rpm alike), and names
# the Debian release it was built for.
version=$(dpkg-deb -f "$out"/safe-common_*.deb Version)
release=$(cd "$SAFE_SOURCE_DIR" && dpkg-parsechangelog -SVersion)
deb=+deb$(. /etc/os-release && echo "${VERSION_ID%%.*}")
[[ $version == *"$deb" ]] || fail "version $version does not name the Debian release ($deb)"
if [[ $version != "$release$deb" ]]; then
    dpkg --compare-versions "$version" lt "$release$deb" || fail "snapshot $version does not sort below the release $release$deb"
    assert_eq -1 "$(rpm --eval "%{lua: print(rpm.vercmp('$version', '$release$deb'))}")" "rpm's order of snapshot $version and release $release$deb"
fi

# lintian: no errors (packaging/build stops on one) and no warnings.
warnings=$(grep '^W:' "$out/lintian.txt" || true)
[[ -z $warnings ]] || fail "lintian warns:"$'\n'"$warnings"

rm -rf "$ctrl" "$out/plugins"

# The RPMs: the same split, safe.yaml %config(noreplace), the plugins pinned to this Slurm.
# Man pages without their compression suffix: Debian 12's rpmbuild leaves them uncompressed,
# Debian 13's and RHEL's gzip them (the spec's file list takes both).
rpmfiles() {
    rpm -qpl "$out"/rpm/RPMS/*/"$1"-[0-9]*.rpm | grep -v '^/usr/share/doc/\|^/usr/share/licenses/\|^/usr/lib/.build-id' |
        sed 's|^\(/usr/share/man/.*\)\.gz$|\1|' | sort | tr '\n' ' '
}
assert_eq "/etc/safe /etc/safe/safe.yaml " "$(rpmfiles safe-common)" "the safe-common RPM's files"
assert_eq "/usr/lib64/slurm/job_submit_safe.so /usr/lib64/slurm/spank_safe.so " "$(rpmfiles safe-slurm-plugins)" "the safe-slurm-plugins RPM's files"
# rpm lists the directories it owns as well: /usr/share/safe and those under it.
monitoring_dirs="/usr/share/safe /usr/share/safe/grafana /usr/share/safe/grafana/dashboards /usr/share/safe/grafana/provisioning \
/usr/share/safe/grafana/provisioning/dashboards /usr/share/safe/grafana/provisioning/datasources /usr/share/safe/prometheus"
assert_eq "$(printf '%s\n' /usr/lib/systemd/system/safed.service /usr/sbin/safed $monitoring $monitoring_dirs $man8/safed.8 | sort | tr '\n' ' ')" \
    "$(rpmfiles safed)" "the safed RPM's files"
assert_eq "/usr/lib/systemd/system/safe-kube-bridge.service /usr/sbin/safe-kube-bridge $man8/safe-kube-bridge.8 " "$(rpmfiles safe-kube-bridge)" "the safe-kube-bridge RPM's files"
assert_eq "/usr/bin/safectl /usr/share/man/man1/safectl.1 " "$(rpmfiles safectl)" "the safectl RPM's files"
assert_eq "/usr/lib/systemd/system/safe-healthcheck-run.service /usr/lib/systemd/system/safe-healthcheck-run.timer /usr/lib/systemd/system/safe-healthcheck.service /usr/sbin/safe-epilog /usr/sbin/safe-healthcheck /usr/sbin/safe-kube-node /usr/sbin/safe-prolog $man8/safe-epilog.8 $man8/safe-healthcheck.8 $man8/safe-kube-node.8 $man8/safe-prolog.8 " \
    "$(rpmfiles safe-node)" "the safe-node RPM's files"
# %config(noreplace): flags "cn".
assert_eq "/etc/safe/safe.yaml cn" "$(rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$out"/rpm/RPMS/noarch/safe-common-*.rpm | grep '^/etc/safe/safe.yaml ')" \
    "the safe-common RPM's safe.yaml flags"
requires=$(rpm -qp --requires "$out"/rpm/RPMS/*/safe-slurm-plugins-*.rpm)
assert_contains "$requires" "slurm >= ${slurm%%-*}" "the safe-slurm-plugins RPM's requirements"
assert_contains "$requires" "slurm < $major.$minor.$((micro + 1))" "the safe-slurm-plugins RPM's requirements"
# Erasing the plugins RPM warns of Slurm settings that still name them, as the Debian prerm does
# on a remove (package.install), and an upgrade says nothing. Run against a private /etc/slurm.
rpm -qp --qf '%{PREUN}' "$out"/rpm/RPMS/*/safe-slurm-plugins-*.rpm >"$out/preun"
mkdir -p "$out/etc-slurm"
echo "required /usr/lib64/slurm/spank_safe.so" >"$out/etc-slurm/plugstack.conf"
echo "JobSubmitPlugins=lua,job_submit/safe" >"$out/etc-slurm/slurm.conf"
preun() { unshare -m sh -c 'mount --bind "$1" /etc/slurm && sh "$2" "$3"' sh "$out/etc-slurm" "$out/preun" "$1" 2>&1; }
erase=$(preun 0) || fail "the safe-slurm-plugins RPM's %preun failed on an erase: $erase"
assert_contains "$erase" "/etc/slurm/plugstack.conf still names spank_safe.so" "the safe-slurm-plugins RPM's erase"
assert_contains "$erase" "/etc/slurm/slurm.conf has JobSubmitPlugins=safe" "the safe-slurm-plugins RPM's erase"
upgrade=$(preun 1) || fail "the safe-slurm-plugins RPM's %preun failed on an upgrade: $upgrade"
assert_eq "" "$upgrade" "the safe-slurm-plugins RPM's %preun on an upgrade"
rm -rf "$out/etc-slurm" "$out/preun"
echo "PASS: build_packages"
