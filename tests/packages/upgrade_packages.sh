#!/usr/bin/env bash
# package.upgrade: a site upgraded from earlier packages to these with SaFE jobs running, as
# docs/install.md says for one host, in a clean Debian root (clean_root.sh). The earlier packages
# are those package.build_upgrade_from made (the commit SAFE_UPGRADE_FROM names) and a 3-node
# cluster runs from them (`safe-cluster up --installed`, 4 CPUs a node) with 20 SaFE jobs: 12
# running, 8 pending.
# Then the packages package.build made go over them, in one apt-get install (the root holds every
# role, and a host's SaFE packages move together: docs/install.md), and safed is restarted as
# `systemctl restart` does after an upgrade:
#  - slurmctld is never restarted (the same process throughout) and keeps running the
#    job_submit plugin it loaded: dpkg put the new file in by rename, so its mapping is of the
#    old, deleted file; a job submitted after the upgrade is admitted with its SaFE settings;
#  - no job is lost: the 12 run on (the same nodes and start, no restart), the 8 pending keep
#    their SaFE settings (AdminComment unchanged);
#  - safed's state store keeps every job, at the schema version the new safed records;
#  - the next failover works: a GPU fault on a node requeues its SaFE jobs (retries 1/2 used)
#    and safed records node_fault;
#  - a downgrade to the earlier packages works (the same schema; a store of a newer schema is
#    refused by safed, tests/unit/state_store_test.cpp), with the jobs still there.
# Prints the figures: jobs lost, slurmctld restarts, time without failover coverage (safed
# stopped until its first pass over Slurm).
set -euo pipefail
source "$(dirname "$0")/../lib/cluster_test.sh"
# shellcheck source-path=SCRIPTDIR source=clean_root.sh
source "$(dirname "$0")/clean_root.sh"
new_debs=${SAFE_TEST_PACKAGES:?SAFE_TEST_PACKAGES names the directory package.build filled}
compgen -G "$new_debs/safe-common_*.deb" >/dev/null || fail "no packages in $new_debs: package.build makes them"
old_debs=$(upgrade_from_debs)
compgen -G "$old_debs/safe-common_*.deb" >/dev/null || fail "no packages in $old_debs: package.build_upgrade_from makes them"
version_of() { dpkg-deb -f "$1"/safed_*.deb Version; }
old_version=$(version_of "$old_debs") new_version=$(version_of "$new_debs")
dpkg --compare-versions "$new_version" gt "$old_version" || fail "the new packages ($new_version) do not sort above the old ($old_version)"

make_clean_root
install_debs "$old_debs"
assert_eq "$old_version" "$(in_root dpkg-query -W -f='${Version}' safed)" "safed's version installed first"
clean_root_cluster_up --nodes 3 --cpus-per-node 4 --gpus-per-node 2

# 20 SaFE jobs of one task each on 12 CPUs: 12 run, 8 wait.
printf '#!/bin/bash\nwhile :; do echo "run ${SLURM_RESTART_COUNT:-0} on $SLURMD_NODENAME"; sleep 1; done\n' >"$root/tmp/job.sh"
chmod 0755 "$root/tmp/job.sh"
mkdir -p "$root/tmp/jobs"
in_cluster 'for i in $(seq 20); do sbatch --parsable -n1 --safe-retries=2 -o /tmp/jobs/%j.out /tmp/job.sh || exit 1; done' >"$root/tmp/jobids" ||
    fail "sbatch of the 20 jobs failed: $(cat "$root/tmp/jobids")"
# jobs_table: "JOBID STATE NODES START RESTARTS ADMINCOMMENT" a line, every job of the 20 (START
# only of a running job: a pending one's is Slurm's estimate, which moves).
jobs_table() {
    local id
    while read -r id; do
        in_cluster "scontrol show job $id" | awk -v id="$id" '
            { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = substr($i, length(kv[1]) + 2) } }
            /^   AdminComment=/ { v["AdminComment"] = substr($0, 17) }
            END { print id, v["JobState"], v["NodeList"], v["JobState"] == "RUNNING" ? v["StartTime"] : "-", v["Restarts"], v["AdminComment"] }'
    done <"$root/tmp/jobids"
}
count_state() { jobs_table | awk -v s="$1" '$2 == s { n++ } END { print n + 0 }'; }
wait_for '[[ $(count_state RUNNING) == 12 && $(count_state PENDING) == 8 ]]' 60 "jobs_table"
store_jobs() { in_root sqlite3 /var/lib/safe/safed.sqlite 'SELECT count(*) FROM jobs'; }
wait_for '[[ $(store_jobs) == 20 ]]' 30 "store_jobs; tail -n 20 $root$cdir/log/safed.out"
before=$(jobs_table)
ctld_pid=$(in_root "$harness" pids --dir "$cdir" | awk '$2 ~ /(^|\/)slurmctld$/ { print $1 }')
[[ $ctld_pid =~ ^[0-9]+$ ]] || fail "no slurmctld among the cluster's processes"
plugin=$(in_root dpkg -L safe-slurm-plugins | grep '/job_submit_safe.so$')
old_inode=$(stat -c %i "$root$plugin")

# The upgrade of this root, which holds every role: all six packages in one apt-get install, as
# on any one host (they require the same safe-common: apt would otherwise remove the others),
# then safed restarted as its package's postinst does under systemd (the root has no systemd).
cp "$new_debs"/*.deb "$root/tmp/"
debs_in_root=()
for p in safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl; do
    debs_in_root+=("/tmp/$(basename "$(compgen -G "$root/tmp/${p}_${new_version}_*.deb")")")
done
in_root "${apt_install[@]}" "${debs_in_root[@]}" >>"$root/tmp/apt.log" 2>&1 || fail "the upgrade failed: $(tail -n 20 "$root/tmp/apt.log")"
t_stop=$(now_ms)
in_root "$harness" safed-restart --dir "$cdir" >/dev/null 2>&1 || fail "safed did not restart after the upgrade: $(tail -n 20 "$root$cdir/log/safed.out")"
# Covered again once the new safed has made a pass over Slurm: its /metrics (as the only safed
# running) count one, with Slurm read.
safed_status() {
    in_cluster 'curl -sS "$SAFE_CONTROLLER_URL/metrics"' | grep -E '^safe_(reconcile_passes_total|controller_up) '
    tail -n 20 "$root$cdir/log/safed.out"
}
passed() {
    in_cluster 'curl -fsS "$SAFE_CONTROLLER_URL/metrics"' |
        awk '$1 == "safe_reconcile_passes_total" && $2 >= 1 { p = 1 } $1 == "safe_controller_up" && $2 == 1 { u = 1 } END { exit !(p && u) }'
}
wait_for passed 60 "safed_status"
uncovered_ms=$(($(now_ms) - t_stop))
for p in safe-common safe-slurm-plugins safe-node safed safe-kube-bridge safectl; do
    assert_eq "$new_version" "$(in_root dpkg-query -W -f='${Version}' "$p")" "$p's version after the upgrade"
done

# slurmctld: the same process, still mapping the old plugin, which dpkg replaced by rename.
assert_eq "$ctld_pid" "$(in_root "$harness" pids --dir "$cdir" | awk '$2 ~ /(^|\/)slurmctld$/ { print $1 }')" "slurmctld's pid after the upgrade"
[[ $(stat -c %i "$root$plugin") != "$old_inode" ]] || fail "$plugin was overwritten in place (same inode)"
grep -q "job_submit_safe.so (deleted)$" "/proc/$ctld_pid/maps" || fail "slurmctld does not map the old, replaced job_submit_safe.so: $(grep job_submit_safe "/proc/$ctld_pid/maps" || true)"
# No job lost: every one as before (the running ones on the same nodes since the same start).
after=$(jobs_table)
lost=$(awk '$2 != "RUNNING" && $2 != "PENDING"' <<<"$after" | wc -l)
ctld_starts=$(grep -c "slurmctld version .* started" "$root$cdir/log/slurmctld.log" || true)
[[ $before == "$after" ]] || fail "jobs changed by the upgrade: $(diff <(echo "$before") <(echo "$after"))"
assert_eq 20 "$(store_jobs)" "jobs in safed's state store after the upgrade"
schema=$(in_root sqlite3 /var/lib/safe/safed.sqlite 'PRAGMA user_version')
assert_eq "$(grep -oP 'kSchemaVersion = \K[0-9]+' "$SAFE_SOURCE_DIR/controller/safed/state_store.cpp")" "$schema" "the state store's schema version"
# A job submitted now is admitted by the new plugins of sbatch and the old job_submit in slurmctld.
late=$(in_cluster "sbatch --parsable -n1 --safe-retries=1 -o /tmp/jobs/%j.out /tmp/job.sh") || fail "sbatch after the upgrade: $late"
assert_contains "$(in_cluster "scontrol show job $late")" "AdminComment=safe: retries=0/1" "a job submitted after the upgrade"

# The next failover: a GPU fault on the node of the first job drains it; its running jobs are
# requeued by safed, one retry used each.
node=$(jobs_table | awk '$2 == "RUNNING" { print $3; exit }')
mapfile -t on_node < <(jobs_table | awk -v n="$node" '$2 == "RUNNING" && $3 == n { print $1 }')
in_cluster "safectl inject --node $node --gpu 0 --fault ecc" >/dev/null || fail "safectl inject failed"
requeued() {
    local id
    for id in "${on_node[@]}"; do
        in_cluster "scontrol show job $id" | grep -q "Restarts=1 " || return 1
        in_cluster "scontrol show job $id" | grep -q "retries=1/2" || return 1
    done
}
wait_for requeued 90 "jobs_table; tail -n 20 $root$cdir/log/safed.out"
assert_contains "$(in_cluster "safectl job ${on_node[0]}")" "node_fault" "safed's record of job ${on_node[0]} after the upgrade"

# A downgrade to the earlier packages: apt installs them when told to, and the earlier safed runs
# on the store the newer one wrote (the same schema).
install_debs "$old_debs" --allow-downgrades
in_root "$harness" safed-restart --dir "$cdir" >/dev/null 2>&1 || fail "the earlier safed did not start on the upgraded store: $(tail -n 20 "$root$cdir/log/safed.out")"
wait_for passed 60 "safed_status"
assert_eq 21 "$(store_jobs)" "jobs in safed's state store after the downgrade"
assert_eq "$ctld_pid" "$(in_root "$harness" pids --dir "$cdir" | awk '$2 ~ /(^|\/)slurmctld$/ { print $1 }')" "slurmctld's pid after the downgrade"

printf 'PASS: upgrade_packages: %s -> %s with 20 SaFE jobs (12 running, 8 pending): jobs lost %d, slurmctld restarts %d, without failover coverage %d.%d s (safed stopped until its first pass); the next failover requeued %d jobs; downgrade works\n' \
    "$old_version" "$new_version" "$lost" $((ctld_starts - 1)) $((uncovered_ms / 1000)) $((uncovered_ms % 1000 / 100)) "${#on_node[@]}"
