#!/usr/bin/env bash
# package.upgrade: a site of two hosts upgraded from earlier packages to these with SaFE jobs
# running, in the order docs/install.md gives, each host a clean Debian root (clean_root.sh):
#  - the controller host: slurmctld, safed, the REST bridge and safectl (safe-common,
#    safe-slurm-plugins, safed, safe-kube-bridge, safectl);
#  - the compute host: the slurmd of the 3 nodes, which run the prolog, epilog, health check and
#    SPANK plugin from its packages (safe-common, safe-slurm-plugins, safe-node), with the
#    cluster's directory and munge's socket shared with the controller host
#    (`safe-cluster up --installed --node-root`).
# The earlier packages are those package.build_upgrade_from made (the commit SAFE_UPGRADE_FROM
# names); 20 SaFE jobs run on them: 12 running, 8 pending. Then:
#  1. the controller host is upgraded (its SaFE packages in one apt-get install; safed restarted
#     as `systemctl restart` does after an upgrade): slurmctld is never restarted and keeps running
#     the job_submit plugin it loaded (dpkg put the new file in by rename: its mapping is of the
#     old, deleted file); no job changes (the same nodes and start, no restart, the same
#     AdminComment); safed's store keeps every job at the new schema version. With the compute
#     host still on the earlier packages: a job submitted now is admitted with its SaFE settings, a
#     job that starts now runs with the SaFE environment, and a failover works (the earlier health
#     checker drains a node with a GPU fault; the new safed requeues its jobs, one retry each);
#  2. the compute host is upgraded: no slurmd restarts, no job changes, the steps that were
#     running keep the SPANK plugin they loaded and a step started now loads the new one; a
#     failover works again;
#  3. a rollback, in the reverse order (compute host, then controller host), works, the earlier
#     safed running on the store the newer one upgraded (the same schema; a store of a newer
#     schema is refused, tests/unit/state_store_test.cpp).
# Prints the figures: jobs lost, slurmctld and slurmd restarts, time without failover coverage
# (safed stopped until its first pass over Slurm).
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
# shellcheck disable=SC2034 # used through namerefs (on_host, expect_versions)
controller_packages=(safe-common safe-slurm-plugins safed safe-kube-bridge safectl)
# shellcheck disable=SC2034 # used through namerefs
node_packages=(safe-common safe-slurm-plugins safe-node)

make_clean_root
controller_root=$root
make_clean_root
node_root=$root
# on_host ROOT PACKAGES_VAR DEBS_DIR [APT_ARGS...]: install_debs on that host, its packages only.
on_host() {
    local -n packages=$2
    root=$1 host_packages=("${packages[@]}")
    install_debs "${@:3}"
    root=$controller_root
}
on_host "$node_root" node_packages "$old_debs"
on_host "$controller_root" controller_packages "$old_debs"
in_node() { root=$node_root in_root "$@"; }
host_versions() {
    local host=$1 p
    shift
    for p in "$@"; do echo "$p $(root=$host in_root dpkg-query -W -f='${Version}' "$p")"; done
}
# expect_versions ROOT PACKAGES_VAR VERSION WHEN
expect_versions() {
    local -n packages=$2
    local expected
    expected=$(printf "%s $3\n" "${packages[@]}")
    assert_eq "$expected" "$(host_versions "$1" "${packages[@]}")" "package versions on the $(basename "$1") host $4"
}
expect_versions "$controller_root" controller_packages "$old_version" "installed first"
expect_versions "$node_root" node_packages "$old_version" "installed first"
[[ -z $(in_root dpkg-query -W -f='${Version}' safe-node 2>/dev/null) ]] || fail "safe-node is installed on the controller host"
[[ -z $(in_node dpkg-query -W -f='${Version}' safed 2>/dev/null) ]] || fail "safed is installed on the compute host"
node_host "$node_root"
clean_root_cluster_up --nodes 3 --cpus-per-node 4 --gpus-per-node 2 --node-root /node-host

# 20 SaFE jobs of one task each on 12 CPUs: 12 run, 8 wait. Each says which run it is and the
# attempt the SPANK plugin told it.
printf '#!/bin/bash\nwhile :; do echo "run ${SLURM_RESTART_COUNT:-0} attempt ${SAFE_ATTEMPT:-none} on $SLURMD_NODENAME"; sleep 1; done\n' >"$root/tmp/job.sh"
chmod 0755 "$root/tmp/job.sh"
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
daemon_pids() { in_root "$harness" pids --dir "$cdir" | awk -v re="$1" '$2 ~ re { print $1 }' | sort -n | paste -sd' ' -; }
ctld_pid=$(daemon_pids '(^|/)slurmctld$')
slurmd_pids=$(daemon_pids '(^|/)slurmd$')
[[ $ctld_pid =~ ^[0-9]+$ ]] || fail "no slurmctld among the cluster's processes"
[[ $slurmd_pids =~ ^[0-9]+( [0-9]+){2}$ ]] || fail "not 3 slurmd among the cluster's processes: '$slurmd_pids'"
# Every slurmd runs in the compute host's root.
for pid in $slurmd_pids; do
    assert_eq "$root/node-host" "$(readlink "/proc/$pid/root")" "the root of slurmd $pid"
done
job_submit=$(in_root dpkg -L safe-slurm-plugins | grep '/job_submit_safe.so$')
old_inode=$(stat -c %i "$root$job_submit")
before=$(jobs_table)

# safed_status / passed: safed covers the cluster again once it has made a pass over Slurm: its
# /metrics (as the only safed running) count one, with Slurm read.
safed_status() {
    in_cluster 'curl -sS "$SAFE_CONTROLLER_URL/metrics"' | grep -E '^safe_(reconcile_passes_total|controller_up) '
    tail -n 20 "$root$cdir/log/safed.out"
}
passed() {
    in_cluster 'curl -fsS "$SAFE_CONTROLLER_URL/metrics"' |
        awk '$1 == "safe_reconcile_passes_total" && $2 >= 1 { p = 1 } $1 == "safe_controller_up" && $2 == 1 { u = 1 } END { exit !(p && u) }'
}
# restart_safed: as its package's postinst does under systemd (the roots have no systemd);
# prints the ms from safed's stop until the new one has passed over Slurm.
restart_safed() {
    local t_stop
    t_stop=$(now_ms)
    in_root "$harness" safed-restart --dir "$cdir" >/dev/null 2>&1 || fail "safed did not restart: $(tail -n 20 "$root$cdir/log/safed.out")"
    wait_for passed 60 "safed_status"
    echo $(($(now_ms) - t_stop))
}
# a_job_starts: cancels one running job of the 20, so that a pending one starts in its place;
# prints that one's id once it runs and has said that the SPANK plugin gave it its attempt
# (SAFE_ATTEMPT: the restart count + 1).
running_ids() { jobs_table | awk '$2 == "RUNNING" { print $1 }' | sort; }
a_job_starts() {
    local was gone next
    was=$(running_ids)
    gone=$(head -n1 <<<"$was")
    in_cluster "scancel $gone" || fail "scancel $gone failed"
    wait_for "[[ -n \$(comm -13 <(echo '$was') <(running_ids)) ]]" 30 "jobs_table"
    next=$(comm -13 <(echo "$was") <(running_ids) | head -n1)
    said_attempt() {
        tail -n1 "$root/tmp/jobs/$next.out" 2>/dev/null |
            awk '$1 == "run" && $3 == "attempt" && $4 == $2 + 1 { ok = 1 } END { exit !ok }'
    }
    wait_for said_attempt 30 "tail -n 3 $root/tmp/jobs/$next.out; jobs_table"
    echo "$next"
}
# gpu_fault_fails_over JOB: a GPU fault on the node of a running job, not JOB's node (JOB is the
# one a_job_starts started, perhaps a job requeued before: the other node's jobs have never been
# requeued), drains it (the compute host's health checker); its running jobs are requeued by
# safed, one retry used each, and wait again.
gpu_fault_fails_over() {
    local node id spare
    spare=$(jobs_table | awk -v j="$1" '$1 == j { print $3 }')
    node=$(jobs_table | awk -v spare="$spare" '$2 == "RUNNING" && $3 != spare { print $3; exit }')
    mapfile -t on_node < <(jobs_table | awk -v n="$node" '$2 == "RUNNING" && $3 == n { print $1 }')
    in_cluster "safectl inject --node $node --gpu 0 --fault ecc" >/dev/null || fail "safectl inject failed"
    requeued() {
        local shown
        for id in "${on_node[@]}"; do
            shown=$(in_cluster "scontrol show job $id")
            grep -q "JobState=PENDING " <<<"$shown" || return 1
            grep -q "Restarts=1 " <<<"$shown" || return 1
            grep -q "retries=1/2" <<<"$shown" || return 1
        done
    }
    wait_for requeued 90 "jobs_table; tail -n 20 $root$cdir/log/safed.out"
    assert_contains "$(in_cluster "safectl job ${on_node[0]}")" "node_fault" "safed's record of job ${on_node[0]}"
    assert_contains "$(in_cluster "scontrol show node $node")" "Reason=SaFE: gpu0 uncorrectable ECC" "the drain of $node"
    requeued_total=$((requeued_total + ${#on_node[@]}))
}
requeued_total=0
# The SPANK plugin the job's batch step maps: "replaced" (a file dpkg has replaced since) or
# "current" (the file installed now).
spank_of_job() {
    local stepd
    # The compute host's: another cluster on this machine may run a job of the same id.
    for stepd in $(pgrep -f "^slurmstepd: \[$1\.batch\]"); do
        [[ $(readlink "/proc/$stepd/root") == "$root/node-host" ]] && break
        stepd=""
    done
    [[ -n $stepd ]] || fail "no slurmstepd of job $1"
    if grep -q 'spank_safe.so (deleted)$' "/proc/$stepd/maps"; then echo replaced
    elif grep -q 'spank_safe.so$' "/proc/$stepd/maps"; then echo current
    else fail "the slurmstepd of job $1 maps no spank_safe.so"; fi
}

# 1. The controller host.
on_host "$controller_root" controller_packages "$new_debs"
uncovered_ms=$(restart_safed)
expect_versions "$controller_root" controller_packages "$new_version" "after its upgrade"
expect_versions "$node_root" node_packages "$old_version" "before its upgrade"
assert_eq "$ctld_pid" "$(daemon_pids '(^|/)slurmctld$')" "slurmctld's pid after the controller's upgrade"
[[ $(stat -c %i "$root$job_submit") != "$old_inode" ]] || fail "$job_submit was overwritten in place (same inode)"
grep -q "job_submit_safe.so (deleted)$" "/proc/$ctld_pid/maps" || fail "slurmctld does not map the old, replaced job_submit_safe.so: $(grep job_submit_safe "/proc/$ctld_pid/maps" || true)"
after=$(jobs_table)
[[ $before == "$after" ]] || fail "jobs changed by the controller's upgrade: $(diff <(echo "$before") <(echo "$after"))"
assert_eq 20 "$(store_jobs)" "jobs in safed's state store after the upgrade"
schema=$(in_root sqlite3 /var/lib/safe/safed.sqlite 'PRAGMA user_version')
assert_eq "$(grep -oP 'kSchemaVersion = \K[0-9]+' "$SAFE_SOURCE_DIR/controller/safed/state_store.cpp")" "$schema" "the state store's schema version"
# The mixed site: a job submitted now is admitted by the new sbatch plugin and the old
# job_submit; one that starts now gets its SaFE environment from the compute host's old plugin.
late=$(in_cluster "sbatch --parsable -n1 --safe-retries=1 -o /tmp/jobs/%j.out /tmp/job.sh") || fail "sbatch after the upgrade: $late"
assert_contains "$(in_cluster "scontrol show job $late")" "AdminComment=safe: retries=0/1" "a job submitted to the mixed site"
started=$(a_job_starts)
assert_eq current "$(spank_of_job "$started")" "the SPANK plugin of job $started, started on the mixed site"
gpu_fault_fails_over "$started"
before=$(jobs_table)

# 2. The compute host.
on_host "$node_root" node_packages "$new_debs"
expect_versions "$node_root" node_packages "$new_version" "after its upgrade"
assert_eq "$slurmd_pids" "$(daemon_pids '(^|/)slurmd$')" "the slurmd pids after the compute host's upgrade"
assert_eq "$ctld_pid" "$(daemon_pids '(^|/)slurmctld$')" "slurmctld's pid after the compute host's upgrade"
after=$(jobs_table)
[[ $before == "$after" ]] || fail "jobs changed by the compute host's upgrade: $(diff <(echo "$before") <(echo "$after"))"
assert_eq replaced "$(spank_of_job "$started")" "the SPANK plugin of job $started, running through the compute host's upgrade"
started_after=$(a_job_starts)
assert_eq current "$(spank_of_job "$started_after")" "the SPANK plugin of job $started_after, started after the compute host's upgrade"
gpu_fault_fails_over "$started_after"
ctld_starts=$(grep -c "slurmctld version .* started" "$root$cdir/log/slurmctld.log" || true)
lost=$(jobs_table | awk '$2 != "RUNNING" && $2 != "PENDING" && $2 != "CANCELLED"' | wc -l)
assert_eq 0 "$lost" "jobs neither running, pending nor cancelled by the test"

# 3. The rollback, in the reverse order.
on_host "$node_root" node_packages "$old_debs" --allow-downgrades
on_host "$controller_root" controller_packages "$old_debs" --allow-downgrades
restart_safed >/dev/null
expect_versions "$node_root" node_packages "$old_version" "after the rollback"
expect_versions "$controller_root" controller_packages "$old_version" "after the rollback"
assert_eq 21 "$(store_jobs)" "jobs in safed's state store after the rollback"
assert_eq "$ctld_pid" "$(daemon_pids '(^|/)slurmctld$')" "slurmctld's pid after the rollback"
assert_eq "$slurmd_pids" "$(daemon_pids '(^|/)slurmd$')" "the slurmd pids after the rollback"

printf 'PASS: upgrade_packages: %s -> %s, the controller host then the compute host, with 20 SaFE jobs (12 running, 8 pending): jobs lost %d, slurmctld restarts %d, slurmd restarts 0, without failover coverage %d.%d s (safed stopped until its first pass); failovers on the mixed and the upgraded site requeued %d jobs; rollback works\n' \
    "$old_version" "$new_version" "$lost" $((ctld_starts - 1)) $((uncovered_ms / 1000)) $((uncovered_ms % 1000 / 100)) "$requeued_total"
