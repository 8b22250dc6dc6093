// snapshot_bench: what safed's journal snapshots (controller.ha) cost, against a real etcd started
// here. For a store of N jobs (default 1,000 and then 10,000; each with two attempts, a failover
// and three actions, each job written in a transaction of its own, as passes write them), side by
// side in one run:
//  - a standby with an empty store replaying the N journal entries (the journal without snapshots);
//  - the active instance making the snapshot and appending it in parts (what delays its pass);
//  - a standby with an empty store reading and restoring the snapshot;
// with the sizes of the store file, the snapshot's image and etcd's database. A benchmark: it
// prints figures and fails only if a standby's store does not end up with every job.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "controller/safed/etcd_journal.hpp"
#include "controller/safed/leadership.hpp"
#include "controller/safed/state_store.hpp"
#include "tests/etcd/local_etcd.hpp"

namespace {

using safe::StateStore;

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

long long now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

long long file_bytes(const std::string& path) {
  long long n = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    auto size = std::filesystem::file_size(path + suffix, ec);
    if (!ec) n += static_cast<long long>(size);
  }
  return n;
}

// One finished job of a realistic shape, in a transaction of its own (one journal entry).
void write_job(StateStore& store, std::uint32_t id) {
  const long long t = 1'780'000'000 + id;
  store.begin();
  safe::JobRecord j;
  j.job_id = id;
  j.submitted = t;
  j.submit_time = t;
  j.user_id = 1000 + id % 50;
  j.name = "train-llm-" + std::to_string(id % 97);
  j.workspace = "research";
  j.max_retries = 3;
  j.retries_used = 1;
  j.gpus = 64;
  j.state = safe::SafeJobState::completed;
  j.last_class = "infrastructure";
  j.last_evidence = "node gpu-" + std::to_string(id % 512) + ": XID 79 (GPU fell off the bus)";
  j.run_seconds = 86'000;
  j.end_time = t + 90'000;
  store.put_job(j);
  for (int attempt = 0; attempt < 2; ++attempt) {
    safe::AttemptRecord a;
    a.job_id = id;
    a.submitted = t;
    a.attempt = attempt;
    a.nodes = "gpu-[" + std::to_string(id % 512) + "-" + std::to_string(id % 512 + 7) + "]";
    a.start_time = t + attempt * 40'000;
    a.end_time = a.start_time + 40'000;
    a.end_state = attempt ? "COMPLETED" : "NODE_FAIL";
    a.failure_class = attempt ? "" : "infrastructure";
    a.evidence = attempt ? "" : j.last_evidence;
    store.put_attempt(a);
  }
  safe::FailoverRecord f;
  f.job_id = id;
  f.submitted = t;
  f.phase = safe::FailoverPhase::done;
  store.put_failover(f);
  for (const char* action : {"checkpoint signal", "requeue", "exclude nodes"})
    store.log_action({t + 40'000, {id, t}, "", action, "", true});
  store.commit();
}

struct Figures {
  long long jobs = 0, store_bytes = 0, image_bytes = 0;
  double replay_ms = 0, snapshot_ms = 0, restore_ms = 0;
};

bool run(safe::EtcdClient& etcd, const std::string& dir, long long jobs, Figures& out) {
  const std::string prefix = "/bench/" + std::to_string(jobs);
  safe::EtcdJournal journal(etcd, prefix);
  safe::Leadership leader(etcd, journal.leader_key(), "bench", {30, 1000, 500});
  for (int i = 0; i < 50 && !leader.leading(now_ms()); ++i) {
    leader.tick(now_ms());
    usleep(100'000);
  }
  if (!leader.leading(now_ms())) {
    std::fprintf(stderr, "snapshot_bench: no leadership in etcd\n");
    return false;
  }
  journal.set_token(leader.token());
  const std::string active_path = dir + "/active-" + std::to_string(jobs) + ".sqlite";
  StateStore active(active_path);
  active.set_journal(&journal);
  for (long long id = 1; id <= jobs; ++id) {
    write_job(active, static_cast<std::uint32_t>(id));
    if (id % 500 == 0) leader.tick(now_ms());  // keeps the lease
  }
  out.jobs = jobs;
  out.store_bytes = file_bytes(active_path);
  auto holds_every_job = [&](StateStore& s) {
    return s.job({1, 1'780'000'001}) &&
           s.job({static_cast<std::uint32_t>(jobs), 1'780'000'000 + jobs}) &&
           s.jobs(true, std::nullopt, static_cast<int>(jobs) + 1).size() == static_cast<std::size_t>(jobs);
  };

  StateStore replayed(dir + "/replayed-" + std::to_string(jobs) + ".sqlite");
  auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto entries = journal.entries_after(replayed.journal_seq(), 100);
    if (!entries || entries->empty()) break;
    for (const auto& e : *entries) replayed.apply_journal_entry(e.seq, e.data);
  }
  out.replay_ms = ms_since(t0);

  leader.tick(now_ms());
  t0 = std::chrono::steady_clock::now();
  active.snapshot_to_journal();
  out.snapshot_ms = ms_since(t0);

  StateStore restored(dir + "/restored-" + std::to_string(jobs) + ".sqlite");
  t0 = std::chrono::steady_clock::now();
  auto entries = journal.entries_after(0, 1);
  if (!entries || entries->size() != 1 || !(*entries)[0].snapshot) {
    std::fprintf(stderr, "snapshot_bench: the journal does not start with the snapshot\n");
    return false;
  }
  restored.restore_snapshot((*entries)[0].seq, (*entries)[0].data);
  out.restore_ms = ms_since(t0);
  out.image_bytes = static_cast<long long>((*entries)[0].data.size());
  if (!holds_every_job(replayed) || !holds_every_job(restored) || restored.journal_seq() != active.journal_seq()) {
    std::fprintf(stderr, "snapshot_bench: a standby's store lacks jobs\n");
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<long long> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
  if (sizes.empty()) sizes = {1000, 10000};
  safe::Etcd etcd;
  if (!etcd.ready) {
    std::fprintf(stderr, "snapshot_bench: etcd did not start (apt-get install etcd-server)\n");
    return 1;
  }
  char tmpl[] = "/tmp/safe-snapshot-bench.XXXXXX";
  std::string dir = mkdtemp(tmpl);
  safe::EtcdClient client({{etcd.url}, 10000});
  std::printf("%8s %12s %12s %14s %14s %14s\n", "jobs", "store MiB", "image MiB", "replay ms", "snapshot ms",
              "restore ms");
  int rc = 0;
  for (long long n : sizes) {
    Figures f;
    try {
      if (!run(client, dir, n, f)) {
        rc = 1;
        break;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "snapshot_bench: %s\n", e.what());
      rc = 1;
      break;
    }
    std::printf("%8lld %12.1f %12.1f %14.0f %14.0f %14.0f\n", f.jobs, f.store_bytes / 1048576.0,
                f.image_bytes / 1048576.0, f.replay_ms, f.snapshot_ms, f.restore_ms);
    std::fflush(stdout);
  }
  std::filesystem::remove_all(dir);
  return rc;
}
