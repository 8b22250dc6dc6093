// The failover planner against a fake Slurm and a fake clock: each test is one story the
// controller must get right, checked through the calls it makes to Slurm.
#include "controller/safed/failover_planner.hpp"

#include <gtest/gtest.h>

#include <csignal>

#include "controller/safed/lost_work.hpp"
#include "controller/safed/status_report.hpp"
#include "tests/unit/fake_slurm.hpp"

namespace safe {
namespace {

using testing::FakeFiles;
using testing::FakeSlurm;

constexpr const char* kMeta = "safe: ws=ml retries=0/3 health=standard sig=USR1@30 hang=0 gpus=2 ckpt=/ck/1";
// An elastic job: -N 4 --safe-min-nodes=2.
constexpr const char* kElasticMeta =
    "safe: ws=ml retries=0/3 health=standard sig=USR1@30 hang=0 gpus=0 elastic=4/2/1 ckpt=/ck/1";

// The records of these stories carry no sub= (as before SaFE wrote it): their key is the id alone.
JobKey key(std::uint32_t id) { return {id, 0}; }

class PlannerTest : public ::testing::Test {
 protected:
  PlannerTest() : store(":memory:") {
    for (int i = 1; i <= 6; ++i) {
      SlurmNode n;
      n.name = "n" + std::to_string(i);
      slurm.nodes.push_back(n);
    }
    config.failover.backoff_initial_s = 10;
    config.failover.rate_limit_per_minute = 100;
    make_planner();
  }

  // A planner on the stories' clock (a restart of safed makes a new one).
  void make_planner() {
    planner = std::make_unique<FailoverPlanner>(config, slurm, store, files, slurm.output_pattern_dialect());
    planner->set_wall_clock_ns([this] { return now * 1000000000LL + 500000000LL; });
  }

  SlurmJob& add_job(std::uint32_t id, const std::string& nodes, const std::string& meta = kMeta) {
    SlurmJob j;
    j.id = id;
    j.name = "train";
    j.state = SlurmJobState::running;
    j.nodes = nodes;
    j.num_nodes = 2;
    j.admin_comment = meta;
    j.submit_time = 900;
    j.start_time = 950;
    slurm.jobs.push_back(j);
    return slurm.jobs.back();
  }

  void pass() {
    slurm.now = now;
    if (planner->needs_partitions()) planner->set_spare_inputs(slurm.partitions, slurm.reservations);
    if (!snapshot) return planner->reconcile(slurm.jobs, slurm.nodes, now);
    // A snapshot, as safed's pass reads Slurm once: what the pass changes shows in the next one.
    const std::vector<SlurmJob> jobs = slurm.jobs;
    planner->reconcile(jobs, slurm.nodes, now);
  }
  // Hot spares: nodes n1..n4 in partition gpu, a pool of one spare; job 7 on n[1-2], another
  // (not SaFE's) on n3: the cluster is full but for the spare, n4.
  void full_cluster_with_one_spare(const std::string& workspaces = "", const char* meta = kMeta) {
    slurm.nodes.resize(4);
    slurm.partitions = {{"gpu", "n[1-4]", true, false}};
    SparePoolConfig pool;
    pool.partition = "gpu";
    pool.count = 1;
    if (!workspaces.empty()) pool.workspaces = {workspaces};
    config.failover.spares = {pool};
    make_planner();
    planner->set_user_names([](std::uint32_t) { return std::string("alice"); });
    add_job(7, "n[1-2]", meta).partition = "gpu";
    for (const char* n : {"n1", "n2", "n3"}) slurm.node(n)->busy = true;
    pass();
  }
  // Shrink and grow back: job 7 (-N 4, with `meta`) on n[1-4] of partition gpu (n[1-6]), another
  // job on n5 and n6: the cluster is full. n3 and n4 fail under job 7: it is signalled, checkpoints
  // and is requeued; n1 and n2 are free, and the job is restarted at its full size.
  void two_of_four_nodes_fail_on_a_full_cluster(const std::string& meta) {
    slurm.partitions = {{"gpu", "n[1-6]", true, false}};
    config.failover.shrink_after_s = 30;
    make_planner();
    SlurmJob& j = add_job(7, "n[1-4]", meta);
    j.num_nodes = 4;
    j.partition = "gpu";
    for (auto& n : slurm.nodes) n.busy = true;
    pass();
    drain("n3", "SaFE: gpu0 uncorrectable ECC=2");
    drain("n4", "SaFE: gpu0 uncorrectable ECC=2");
    run_for(2);
    files.checkpoints["/ck/1"] = now;
    run_for(2);
    ASSERT_EQ(1, slurm.count("requeue 7"));
    for (const char* n : {"n1", "n2", "n3", "n4"}) slurm.node(n)->busy = false;
    while (slurm.count("update 7") == 0 && now < 1100) run_for(1);
    std::string restart = last_update_with("comment=");
    EXPECT_NE(std::string::npos, restart.find("update 7 exc=n3,n4")) << restart;
    if (meta.find("elastic=") != std::string::npos) {
      expect_restart_sized("4", "before shrink_after_s it waits for all 4");
    }
  }
  // Then, after failover.shrink_after_s, it runs shrunk on n1 and n2.
  void runs_shrunk_on_n1_n2() {
    two_of_four_nodes_fail_on_a_full_cluster(kElasticMeta);
    run_for(30);
    ASSERT_EQ("update 7 nodes=2", last_update());
    start_again(7, "n[1-2]");
    slurm.job(7)->num_nodes = 2;
    slurm.node("n1")->busy = slurm.node("n2")->busy = true;
    run_for(1);
  }
  // n2's GPU fails and job 7 ends: n1 and n2 are free again (n2 drained), n3 still busy.
  void gpu_fault_ends_job_7_on_n2() {
    drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
    end_job(7, SlurmJobState::failed, 1);
    slurm.node("n1")->busy = slurm.node("n2")->busy = false;
  }
  // Job 7 with --safe-hang-timeout=60, 100 bytes in its output /out/7.log.
  void add_job_with_hang_timeout_60() {
    add_job(7, "n[1-2]", "safe: retries=0/2 health=standard sig=USR1@5 hang=60 gpus=2");
    slurm.job(7)->std_out = "/out/%j.log";
    files.files["/out/7.log"] = {100, 0};
    pass();
  }
  // Jobs 1..count, with the rate limit at `limit`, all exit with an infrastructure code at once.
  void flood_of_infrastructure_exits(std::uint32_t count, int limit) {
    config.failover.rate_limit_per_minute = limit;
    planner->set_config(config);
    for (std::uint32_t id = 1; id <= count; ++id)
      add_job(id, "n[1-2]", "safe: retries=0/3 health=standard sig=USR1 hang=0 gpus=2");
    pass();
    for (std::uint32_t id = 1; id <= count; ++id) end_job(id, SlurmJobState::failed, 75);
  }
  // Job 7 fails with an infrastructure exit code, is failed over and runs again on n[3-4].
  void fail_over_once_and_run_again() {
    add_job(7, "n[1-2]");
    pass();
    end_job(7, SlurmJobState::failed, 75);
    run_for(2);
    ASSERT_EQ(1, slurm.count("requeue 7"));
    start_again(7, "n[3-4]");
    run_for(1);
  }
  // Advances the clock one second at a time, a pass each second.
  void run_for(int seconds) {
    for (int i = 0; i < seconds; ++i) {
      ++now;
      pass();
    }
  }
  void drain(const std::string& node, const std::string& reason) {
    SlurmNode* n = slurm.node(node);
    n->drain = true;
    n->reason = reason;
    n->reason_time = now;
  }
  void end_job(std::uint32_t id, SlurmJobState state, int exit_code = 0) {
    SlurmJob* j = slurm.job(id);
    j->state = state;
    j->exit_code = static_cast<std::uint32_t>(exit_code) << 8;
    j->end_time = now;
  }
  // Slurm lost the node: DOWN (or not responding) since now.
  void node_dies(const std::string& node, const std::string& reason = "") {
    SlurmNode* n = slurm.node(node);
    n->down = n->state_down = true;  // Slurm sets a node that stopped answering DOWN
    n->reason = reason;
    n->reason_time = now;
  }
  // Slurm requeued the job itself (a --requeue job after a node failure, a prolog failure, an
  // admin): pending again, its next run counted, held back by Slurm's ~120 s BeginTime.
  void slurm_requeues(std::uint32_t id) {
    SlurmJob* j = slurm.job(id);
    j->state = SlurmJobState::pending;
    j->restart_count++;
    j->start_time = now + 120;
    // Slurm's end time of a pending job is no run's end: 22.05 showed a requeued job whose
    // prolog refused its run 2^32 + 61 s ahead of its start.
    j->end_time = j->start_time + 4294967357LL;
    j->submit_time = now;
    j->nodes.clear();
  }
  void start_again(std::uint32_t id, const std::string& nodes) {
    SlurmJob* j = slurm.job(id);
    j->state = SlurmJobState::running;
    j->nodes = nodes;
    j->start_time = now;
  }
  int calls_with(const std::string& part) const {
    int n = 0;
    for (const auto& c : slurm.calls) n += c.find(part) != std::string::npos ? 1 : 0;
    return n;
  }
  // The last update call that has `part` in it.
  std::string last_update_with(const std::string& part) {
    for (auto it = slurm.calls.rbegin(); it != slurm.calls.rend(); ++it)
      if (it->rfind("update", 0) == 0 && it->find(part) != std::string::npos) return *it;
    return "";
  }
  // The restart's node count went out just before the restart itself (which lets Slurm start it).
  void expect_restart_sized(const std::string& nodes, const char* why = "") {
    std::vector<std::string> updates;
    for (const auto& c : slurm.calls)
      if (c.rfind("update", 0) == 0) updates.push_back(c);
    ASSERT_GE(updates.size(), 2u);
    EXPECT_EQ("update 7 nodes=" + nodes, updates[updates.size() - 2]) << why;
    EXPECT_NE(std::string::npos, updates.back().find("comment=")) << updates.back();
  }
  std::string last_update() {
    for (auto it = slurm.calls.rbegin(); it != slurm.calls.rend(); ++it)
      if (it->rfind("update", 0) == 0) return *it;
    return "";
  }
  // slurmctld, killed before it saved job 7's requeue, comes back from its earlier state: the run
  // as it was (STATE), its restart uncounted, none of safed's update.
  SlurmJob* slurmctld_forgets_the_requeue(SlurmJobState state) {
    SlurmJob* j = slurm.job(7);
    j->state = state;
    j->restart_count = 0;
    j->start_time = 950;
    j->exc_nodes.clear();
    j->admin_comment = kMeta;
    return j;
  }
  // Job 7 on n[1-2] fails over for a GPU fault on n2: signal, checkpoint, requeue, update. The
  // update's call, as FakeSlurm records it.
  std::string fail_over_on_a_gpu_fault() {
    add_job(7, "n[1-2]");
    pass();
    drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
    run_for(2);
    files.checkpoints["/ck/1"] = now;  // the checkpoint on the signal
    run_for(2);
    EXPECT_EQ(1, slurm.count("requeue 7"));
    std::string restart = last_update();
    EXPECT_NE(std::string::npos, restart.find("update 7 exc=n2,n1 start=now")) << restart;
    return restart;
  }

  FakeSlurm slurm;
  bool snapshot = false;  // each pass sees the jobs as they were when it began (older stories: live)
  FakeFiles files;
  StateStore store;
  SafeConfig config;
  std::unique_ptr<FailoverPlanner> planner;
  long long now = 1000;
};

TEST_F(PlannerTest, SafeDrainUnderRunningJobSignalsWaitsForCheckpointThenRequeuesAway) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(1);
  EXPECT_EQ(1, slurm.count("signal 7 " + std::to_string(SIGUSR1)));
  EXPECT_EQ(0, slurm.count("requeue"));
  run_for(5);
  EXPECT_EQ(0, slurm.count("requeue")) << "grace not over, no checkpoint yet";
  files.checkpoints["/ck/1"] = now;  // the job wrote its checkpoint
  run_for(1);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  run_for(1);
  EXPECT_EQ("update 7 exc=n2,n1 start=now comment=safe: ws=ml retries=1/3 health=standard sig=USR1@30 hang=0 gpus=2 "
            "ckpt=/ck/1 last=node_fault n2 SaFE: gpu0 uncorrectable ECC=2",
            last_update());
  start_again(7, "n[3-4]");
  run_for(3);
  EXPECT_EQ(1, slurm.count("requeue"));
  EXPECT_EQ(1u, planner->counters().mttr_samples.size());
  EXPECT_EQ(1, planner->counters().failovers_by_class.at("node_fault"));
}

// A run failed over while it still runs (on a node cut off, say) may go on writing checkpoints:
// their fence is written before the requeue, and the requeue waits for it.
TEST_F(PlannerTest, TheSupersededRunsCheckpointsAreFencedBeforeItIsRequeued) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(2);
  files.checkpoints["/ck/1"] = now;  // after the signal's second
  files.fence_answer = {};           // the write is under way
  run_for(3);
  EXPECT_EQ(0, slurm.count("requeue")) << "requeued before the fence was written";
  ASSERT_FALSE(files.fences.empty());
  files.fence_answer = Observed<std::string>::known("step-10-attempt-1");
  run_for(1);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  for (const auto& f : files.fences) EXPECT_EQ((std::pair<std::uint32_t, int>{7, 1}), f) << "the first attempt's";
  std::size_t asked = files.fences.size();
  start_again(7, "n[3-4]");
  run_for(3);
  EXPECT_EQ(asked, files.fences.size()) << "fenced once";
}

// The checkpoint the signal asks for is written just after a read of the directory in the
// signal's second. The next pass must read again at once: an answer from the signal's second is
// still fresh by age, but cannot show that checkpoint (in CI the failover waited 4 s for the
// freshness window to pass, and counted the stalled job's wait as lost work).
TEST_F(PlannerTest, AfterTheSignalTheCheckpointIsReadAgainAtOnce) {
  files.checkpoint_reads_take_a_pass = true;
  add_job(7, "n[1-2]");
  files.now = now;
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  auto next_pass = [&] {
    ++now;
    files.now = now;
    pass();
  };
  next_pass();  // the run on a drained node: the checkpoint signal, and a read of the directory
  ASSERT_EQ(1, slurm.count("signal 7 " + std::to_string(SIGUSR1)));
  long long signalled = now;
  files.checkpoints["/ck/1"] = signalled + 1;  // the job's checkpoint, after that read
  next_pass();
  next_pass();
  EXPECT_EQ(1, slurm.count("requeue 7")) << "requeued " << now - signalled
                                         << " s after the signal; a read from the signal's second hid the checkpoint";
  EXPECT_LE(files.checkpoint_reads, 4);
}

// Whether the prolog is refusing the run is read off the pass; an answer that arrives a pass later
// (a busy host) must still count, or the failover would wait for ever.
TEST_F(PlannerTest, ARunOnADrainedNodeFailsOverWhenItsPrologAnswerComesAPassLate) {
  files.late_reads = true;
  add_job(7, "n[1-2]");
  files.now = now;
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  for (int i = 0; i < 3; ++i) {
    ++now;
    files.now = now;
    pass();
  }
  EXPECT_EQ(1, slurm.count("signal 7 " + std::to_string(SIGUSR1)));
}

// A periodic checkpoint the job finished in the same second as the checkpoint signal, but before
// it, is not the checkpoint the signal asked for: the failover waits for a newer one.
TEST_F(PlannerTest, ACheckpointFromJustBeforeTheSignalIsNotTheOneItAskedFor) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  files.checkpoints["/ck/1"] = now + 1;  // in the second the signal goes out, before it (the clock: +0.5 s)
  run_for(1);
  ASSERT_EQ(1, slurm.count("signal 7"));
  run_for(3);
  EXPECT_EQ(0, slurm.count("requeue 7")) << "requeued on a checkpoint older than the signal";
  files.checkpoints["/ck/1"] = now;  // the one the signal asked for
  run_for(1);
  EXPECT_EQ(1, slurm.count("requeue 7"));
}

TEST_F(PlannerTest, GraceOverWithoutCheckpointStillRequeues) {
  add_job(7, "n[1-2]");
  pass();
  drain("n1", "SaFE: gpu3 lost");
  run_for(29);
  EXPECT_EQ(0, slurm.count("requeue"));
  run_for(2);
  EXPECT_EQ(1, slurm.count("requeue 7"));
}

TEST_F(PlannerTest, AdminDrainIsNotAFault) {
  add_job(7, "n[1-2]");
  pass();
  drain("n1", "maintenance on Tuesday");
  run_for(5);
  EXPECT_TRUE(slurm.calls.empty());
}

TEST_F(PlannerTest, UserErrorIsRecordedNotRequeued) {
  add_job(7, "n[1-2]");
  pass();
  end_job(7, SlurmJobState::failed, 1);
  run_for(3);
  EXPECT_EQ(0, slurm.count("requeue"));
  EXPECT_EQ("", last_update()) << "Slurm refuses changes to ended jobs: nothing sent";
  EXPECT_NE(std::string::npos, store.job(key(7))->last_evidence.find("exit code 1, no node fault seen (not retried"));
  EXPECT_EQ(SafeJobState::failed, store.job(key(7))->state);
  EXPECT_EQ("user_error", store.attempts(key(7)).back().failure_class);
}

TEST_F(PlannerTest, FailedAfterNodeFaultDuringTheJobIsRequeuedExcludingIt) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu1 uncorrectable ECC=1");
  end_job(7, SlurmJobState::failed, 1);  // died before safed could signal it
  run_for(1);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  run_for(1);
  EXPECT_NE(std::string::npos, last_update().find("exc=n2,n1 start=now"));
}

TEST_F(PlannerTest, TimeoutAndCancelAreNotRequeued) {
  add_job(7, "n[1-2]");
  add_job(8, "n[3-4]");
  pass();
  end_job(7, SlurmJobState::timeout);
  end_job(8, SlurmJobState::cancelled);
  run_for(3);
  EXPECT_EQ(0, slurm.count("requeue"));
  EXPECT_EQ("timeout", store.job(key(7))->last_class);
  EXPECT_EQ("cancelled", store.job(key(8))->last_class);
}

// A user who cancels a job while it fails over (during the checkpoint grace, or cancelled after a
// node fault before safed signalled it) has ended it: safed used to requeue it and bring it back.
TEST_F(PlannerTest, AJobCancelledDuringItsFailoverStaysCancelled) {
  add_job(7, "n[1-2]");
  add_job(8, "n[3-4]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(1);
  ASSERT_EQ(1, slurm.count("signal 7 " + std::to_string(SIGUSR1)));
  end_job(7, SlurmJobState::cancelled);  // scancel within the grace
  long long cancelled_at = now;
  drain("n4", "SaFE: gpu1 lost");
  end_job(8, SlurmJobState::cancelled);  // scancel before the failover's first step
  run_for(5);
  EXPECT_EQ(0, slurm.count("requeue"));
  EXPECT_EQ("", last_update());
  EXPECT_EQ(SafeJobState::cancelled, store.job(key(7))->state);
  EXPECT_EQ(SafeJobState::cancelled, store.job(key(8))->state);
  // The attempt that was failing over ends with the cancel, and counts.
  EXPECT_EQ(cancelled_at, store.attempts(key(7)).back().end_time);
  EXPECT_EQ(cancelled_at, store.job(key(7))->end_time);
  EXPECT_EQ(cancelled_at - 950, store.job(key(7))->run_seconds);
}

// A site that retries cancelled jobs (failover.retry_classes lists `cancelled`) still has them
// retried: only a cancel during another failover ends it.
TEST_F(PlannerTest, ASiteThatRetriesCancelledJobsStillHasThemRequeued) {
  config.failover.retry_classes.push_back("cancelled");
  make_planner();
  add_job(7, "n[1-2]");
  pass();
  end_job(7, SlurmJobState::cancelled);
  run_for(3);
  EXPECT_EQ(1, slurm.count("requeue 7"));
}

// SchedulerParameters=requeue_delay=0 (25.11) makes a requeued job eligible a second later: Slurm
// may start it before safed's next pass. A running job's nodes and start time cannot change
// (slurmctld refuses), so safed only writes the record; before, it retried the refused update on
// every pass and never finished the failover.
TEST_F(PlannerTest, AJobSlurmStartedAgainBeforeSafedsRestartIsOnlyRecorded) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(2);  // the signal, then a pass in the grace
  files.checkpoints["/ck/1"] = now;
  run_for(1);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  start_again(7, "n[3-4]");  // by Slurm, before safed's next pass
  run_for(3);
  EXPECT_EQ(1, slurm.count("update 7"));
  EXPECT_EQ("update 7 comment=safe: ws=ml retries=1/3 health=standard sig=USR1@30 hang=0 gpus=2 ckpt=/ck/1 "
            "last=node_fault n2 SaFE: gpu0 uncorrectable ECC=2",
            last_update());
  EXPECT_EQ(FailoverPhase::done, store.failovers(key(7)).back().phase);
  EXPECT_EQ(1, planner->counters().failovers_by_class.at("node_fault"));
  EXPECT_EQ(1u, planner->counters().mttr_samples.size()) << "the restart's MTTR sample";
  EXPECT_NE(0, store.failovers(key(7)).back().running_again_time);
}

TEST_F(PlannerTest, InfraExitCodeRetriedUntilRetriesAreUsedUp) {
  add_job(7, "n[1-2]", "safe: retries=0/1 health=standard sig=USR1 hang=0 gpus=2");
  pass();
  end_job(7, SlurmJobState::failed, 75);
  run_for(2);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_NE(std::string::npos, last_update().find("retries=1/1"));
  start_again(7, "n[3-4]");
  run_for(20);
  end_job(7, SlurmJobState::failed, 75);
  run_for(20);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_NE(std::string::npos, store.job(key(7))->last_evidence.find("retries exhausted (1/1)"));
  EXPECT_EQ(SafeJobState::failed, store.job(key(7))->state);
}

TEST_F(PlannerTest, ARequeueSlurmctldLostIsMadeAgainAndTheJobRequeuedOnce) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(2);
  files.checkpoints["/ck/1"] = now;  // the checkpoint on the signal
  run_for(1);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  // slurmctld is killed before it saves the requeue: the run goes on as before.
  SlurmJob* j = slurmctld_forgets_the_requeue(SlurmJobState::running);
  run_for(1);
  EXPECT_EQ(2, slurm.count("requeue 7")) << "requeued again";
  run_for(1);
  EXPECT_NE(std::string::npos, last_update().find("update 7 exc=n2,n1 start=now"));
  EXPECT_NE(std::string::npos, last_update().find("retries=1/3")) << "one retry for the one failover";
  start_again(7, "n[3-4]");
  run_for(3);
  EXPECT_EQ(2, slurm.count("requeue 7"));
  EXPECT_EQ(1, j->restart_count);
  EXPECT_EQ(1u, store.failovers(key(7)).size());
  EXPECT_EQ(1, planner->counters().failovers_by_class.at("node_fault"));
}

TEST_F(PlannerTest, ARequeueAndRestartSlurmctldLostAreMadeAgain) {
  const std::string restart = fail_over_on_a_gpu_fault();
  // slurmctld is killed before it saves either.
  SlurmJob* j = slurmctld_forgets_the_requeue(SlurmJobState::running);
  run_for(1);
  EXPECT_EQ(2, slurm.count("requeue 7")) << "requeued again";
  run_for(1);
  EXPECT_EQ(2, slurm.count(restart)) << "the same update again, Slurm's requeue hold lifted";
  EXPECT_EQ(1, store.job(key(7))->retries_used);
  start_again(7, "n[3-4]");
  run_for(3);
  EXPECT_EQ(2, slurm.count("requeue 7"));
  EXPECT_EQ(2, slurm.count(restart));
  EXPECT_EQ(1, j->restart_count);
  EXPECT_EQ(1u, store.failovers(key(7)).size());
  EXPECT_EQ(1, planner->counters().failovers_by_class.at("node_fault"));
}

TEST_F(PlannerTest, AnUpdateSlurmctldLostIsMadeAgainOnceAndAPlannedStartIsNotFoughtEveryPass) {
  const std::string restart = fail_over_on_a_gpu_fault();
  // slurmctld saved the requeue, not the update: Slurm's hold, no exclusions, the old record.
  SlurmJob* j = slurm.job(7);
  j->exc_nodes.clear();
  j->admin_comment = kMeta;
  j->start_time = now + 120;
  run_for(1);
  EXPECT_EQ(2, slurm.count(restart)) << "the update again";
  // The scheduler plans the start far ahead (a busy cluster): nothing more to lift.
  for (int i = 0; i < 5; ++i) {
    j->start_time = now + 500;
    run_for(1);
  }
  EXPECT_EQ(2, slurm.count("update 7"));
  start_again(7, "n[3-4]");
  run_for(2);
  EXPECT_EQ(1, store.job(key(7))->retries_used);
  EXPECT_EQ(1, slurm.count("requeue 7"));
}

TEST_F(PlannerTest, ALostRequeueOfAJobThatHadEndedIsMadeAgain) {
  add_job(7, "n[1-2]");
  pass();
  end_job(7, SlurmJobState::failed, 75);  // the infrastructure exit code: retried
  run_for(2);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  run_for(1);
  ASSERT_EQ(1, slurm.count("update 7 exc="));
  // slurmctld comes back from before the requeue: the job FAILED, its restart uncounted.
  slurmctld_forgets_the_requeue(SlurmJobState::failed);
  run_for(1);
  EXPECT_EQ(2, slurm.count("requeue 7"));
  run_for(1);
  EXPECT_EQ(2, slurm.count("update 7 exc="));
  EXPECT_NE(std::string::npos, last_update().find("retries=1/3"));
  start_again(7, "n[3-4]");
  run_for(2);
  EXPECT_EQ(1u, store.failovers(key(7)).size());
}

TEST_F(PlannerTest, NodeDeathRequeuedBySlurmStartsAtOnceAwayFromIt) {
  add_job(7, "n[1-2]");
  pass();
  node_dies("n2", "Not responding");
  slurm_requeues(7);
  run_for(1);
  EXPECT_EQ(0, slurm.count("requeue"));
  EXPECT_NE(std::string::npos, last_update().find("update 7 exc=n2,n1 start=now"));
  EXPECT_NE(std::string::npos, last_update().find("retries=1/3"));
  // Slurm superseded the run itself: the fence comes before safed lets the next one start.
  EXPECT_EQ((std::vector<std::pair<std::uint32_t, int>>{{7, 1}}), files.fences);
}

TEST_F(PlannerTest, ANodesEarlierFaultWithTheSameReasonIsNotWhenALaterRunsFaultBegan) {
  // safed's own reason for a dead slurmd reads the same each time it dies.
  const std::string refused = "SaFE-unreachable: slurmd 10.0.0.12:6818 connection refused x3 over 2.0 s";
  node_dies("n2", refused);
  run_for(1);
  SlurmNode* n2 = slurm.node("n2");
  n2->down = n2->state_down = false;  // back in service
  n2->reason.clear();
  n2->reason_time = 0;
  run_for(300);
  add_job(7, "n[1-2]").start_time = now;
  pass();
  run_for(10);
  const long long died = now;
  node_dies("n2", refused);
  slurm_requeues(7);
  run_for(1);
  start_again(7, "n[3-4]");
  run_for(2);
  ASSERT_TRUE(store.failover(key(7), 0).has_value());
  EXPECT_EQ(died, store.failover(key(7), 0)->fault_time) << "not the death 300 s before the job started";
  ASSERT_EQ(1u, planner->counters().mttr_samples.size());
  EXPECT_LE(planner->counters().mttr_samples[0], 3.0);
}

// safe-prolog refused the run on n1 (a GPU broke between health checks) and Slurm requeued it.
constexpr const char* kNoRetries = "safe: ws=ml retries=0/0 health=standard sig=USR1@30 hang=0 gpus=1";
NodeFault xgmi_refusal() { return {"n1", "prolog", "xgmi gpu0 1 of 7 XGMI/NVLink links down"}; }

TEST_F(PlannerTest, PrologRefusalCostsNoRetryAndStartsTheJobAtOnceAwayFromTheNode) {
  SlurmJob& job = add_job(7, "n1", kNoRetries);
  job.num_nodes = 1;
  pass();  // Slurm shows the job running while its prolog runs
  files.prolog_refusals[{7, 0}] = xgmi_refusal();
  drain("n1", "SaFE: gpu0 1 of 7 XGMI/NVLink links down");
  run_for(2);
  EXPECT_TRUE(slurm.calls.empty()) << "no failover of a run the prolog refuses: Slurm requeues it";
  slurm_requeues(7);
  run_for(1);
  EXPECT_EQ("update 7 exc=n1 start=now comment=safe: ws=ml retries=0/0 health=standard sig=USR1@30 hang=0 gpus=1 "
            "last=node_fault n1 xgmi gpu0 1 of 7 XGMI/NVLink links down (refused by safe-prolog)",
            last_update())
      << "not held although the job has no retries: the refused run never started";
  start_again(7, "n2");
  run_for(2);
  EXPECT_EQ(0, store.job(key(7))->retries_used);
  EXPECT_EQ("PROLOG_REFUSED", store.attempts(key(7)).at(0).end_state);
  EXPECT_LE(store.attempts(key(7)).at(0).end_time, now) << "the refused run ended when safed saw it requeued, not at "
                                                            "the pending job's projected end";
  EXPECT_EQ("node_fault", store.attempts(key(7)).at(0).failure_class);
  EXPECT_FALSE(store.failover(key(7), 0)->uses_retry);
  EXPECT_EQ(1u, planner->counters().mttr_samples.size());
}

TEST_F(PlannerTest, PrologRefusalOfARunSafedNeverSawRunning) {
  add_job(7, "", kNoRetries).num_nodes = 1;
  slurm_requeues(7);
  files.prolog_refusals[{7, 0}] = xgmi_refusal();
  run_for(1);
  EXPECT_NE(std::string::npos, last_update().find("update 7 exc=n1 start=now"));
  // A multi-node job's other nodes revoked its credential, and safed does not know which they were.
  add_job(8, "", kNoRetries);
  slurm_requeues(8);
  files.prolog_refusals[{8, 0}] = xgmi_refusal();
  run_for(1);
  EXPECT_NE(std::string::npos, last_update().find("update 8 exc=n1 start=+" + std::to_string(kRevokeMargin_s)))
      << last_update();
}

TEST_F(PlannerTest, APendingRequeuedJobHasItsPrologEvidenceReadOnce) {
  add_job(7, "", kNoRetries);
  slurm_requeues(7);
  run_for(10);
  EXPECT_EQ(1, files.prolog_reads);
  EXPECT_TRUE(slurm.calls.empty());
}

TEST_F(PlannerTest, WaitsForTheOldRunToWindDownAndLiftsAHoldSlurmPutsBack) {
  add_job(7, "n[1-2]");
  pass();
  node_dies("n2");
  slurm_requeues(7);
  slurm.job(7)->completing = true;  // the old run still completing
  run_for(2);
  EXPECT_EQ(0, slurm.count("update 7 exc")) << "a StartTime set now would be overwritten";
  slurm.job(7)->completing = false;
  run_for(1);
  EXPECT_NE(std::string::npos, last_update().find("update 7 exc=n2,n1 start=now"));
  slurm.job(7)->start_time = now + 120;  // Slurm's hold came back
  run_for(1);
  EXPECT_EQ("update 7 start=now", last_update());
  run_for(2);
  EXPECT_EQ(1, slurm.count("update 7 start=now"));
}

TEST_F(PlannerTest, NodeDeathWithRetriesUsedUpHoldsWhatSlurmRequeued) {
  add_job(7, "n[1-2]", "safe: retries=2/2 health=standard sig=USR1 hang=0 gpus=2");
  pass();
  node_dies("n2");
  slurm_requeues(7);
  run_for(2);
  EXPECT_NE(std::string::npos, last_update().find("update 7 hold comment="));
  EXPECT_NE(std::string::npos, last_update().find("retries exhausted (2/2)"));
  EXPECT_EQ(SafeJobState::held, store.job(key(7))->state);
  EXPECT_EQ(0, slurm.count("update 7 exc"));
}

TEST_F(PlannerTest, NodeAlreadyDownAtStartIsNotCountedAgainOnEveryRestart) {
  config.failover.lemon_faults = 2;
  slurm.node("n5")->down = slurm.node("n5")->state_down = true;  // no reason time: e.g. never registered
  for (int restart = 0; restart < 3; ++restart) {
    make_planner();
    run_for(1);
  }
  EXPECT_EQ(0, slurm.count("drain n5"));
}

TEST_F(PlannerTest, SlurmRequeueWithoutFaultIsLeftAlone) {
  add_job(7, "n[1-2]");
  pass();
  slurm_requeues(7);
  run_for(3);
  EXPECT_TRUE(slurm.calls.empty()) << "an admin's requeue is theirs: no hold, no update";
}

TEST_F(PlannerTest, RestartDuringFailoverRequeuesExactlyOnce) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  end_job(7, SlurmJobState::failed, 1);
  slurm.crash_after_requeue = true;
  EXPECT_THROW(run_for(1), std::runtime_error);  // safed dies right after Slurm requeued the job
  slurm.crash_after_requeue = false;
  make_planner();  // restart: memory lost
  run_for(3);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_NE(std::string::npos, last_update().find("exc=n2,n1 start=now"));
  EXPECT_NE(std::string::npos, last_update().find("retries=1/3"));
}

TEST_F(PlannerTest, RestartBeforeRequeueRequeuesOnce) {
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(1);  // signalled
  make_planner();
  files.checkpoints["/ck/1"] = now + 1;
  run_for(3);
  EXPECT_EQ(1, slurm.count("signal"));
  EXPECT_EQ(1, slurm.count("requeue 7"));
}

TEST_F(PlannerTest, RateLimitSpreadsAFloodOfFailovers) {
  flood_of_infrastructure_exits(5, 3);
  run_for(5);
  EXPECT_EQ(3, slurm.count("requeue"));
  EXPECT_GE(planner->counters().deferred_rate_limit, 2);
  run_for(60);
  EXPECT_EQ(5, slurm.count("requeue"));
}

// A failed pass or a restart of safed makes a new planner from the state store: the failovers
// still open (requeued, not yet running again) keep their slots of the limit. (The new planner
// counted only finished ones, so a flood could get a second full minute's worth at once.)
TEST_F(PlannerTest, ANewPlannerKeepsTheOpenFailoversSlotsOfTheRateLimit) {
  flood_of_infrastructure_exits(6, 3);
  for (int i = 0; i < 5 && slurm.count("requeue") < 3; ++i) {
    ++now;
    pass();
  }
  ASSERT_EQ(3, slurm.count("requeue"));
  make_planner();  // before a pass has seen the requeued jobs: their failovers are open
  run_for(5);
  EXPECT_EQ(3, slurm.count("requeue")) << "the minute's 3 slots are still taken";
  EXPECT_EQ(3, planner->rate_limit_used(now));
  run_for(60);
  EXPECT_EQ(6, slurm.count("requeue"));
}

// What safed could not do goes to the journal as a warning (`journalctl -p warning -u safed`); what
// it did, as a notice.
TEST_F(PlannerTest, AnActionSlurmRefusesIsLoggedAsAWarning) {
  add_job(7, "n[1-2]");
  pass();
  slurm.requeue_error = "Job is pending execution";
  end_job(7, SlurmJobState::failed, 75);
  run_for(2);
  ASSERT_GE(slurm.count("requeue 7"), 1);
  auto priority_of = [](const std::vector<LogEntry>& log, const std::string& text) {
    for (const auto& line : log)
      if (line.text.find(text) != std::string::npos) return std::optional<LogPriority>(line.priority);
    return std::optional<LogPriority>();
  };
  EXPECT_EQ(LogPriority::warning, priority_of(planner->take_log(), "job 7: requeue FAILED: Job is pending execution"));
  slurm.requeue_error.clear();
  run_for(1);
  EXPECT_EQ(LogPriority::notice, priority_of(planner->take_log(), "job 7: requeue"));
}

TEST_F(PlannerTest, BackoffDelaysARepeatedFailover) {
  fail_over_once_and_run_again();
  end_job(7, SlurmJobState::failed, 75);
  run_for(5);
  EXPECT_EQ(1, slurm.count("requeue 7")) << "second failover waits backoff_initial_s = 10";
  run_for(10);
  EXPECT_EQ(2, slurm.count("requeue 7"));
}

// The system clock steps (an admin's date -s, NTP's first correction): safed moves its running
// timers with it (Safed::watch_clock calls shift_clock), so a step forward is not an hour of
// silence from the job and a step back does not stretch a grace period by an hour.
TEST_F(PlannerTest, AClockStepForwardIsNoHang) {
  add_job_with_hang_timeout_60();
  run_for(30);
  now += 3600;
  planner->shift_clock(3600);
  run_for(20);
  EXPECT_EQ(0, slurm.count("signal")) << "50 s without output, not 3650";
  run_for(11);
  EXPECT_EQ(1, slurm.count("signal 7")) << "a real hang is still found, 60 s after the last output";
}

TEST_F(PlannerTest, AClockStepBackKeepsTheGracePeriodItsLength) {
  add_job(7, "n[1-2]");
  pass();
  drain("n1", "SaFE: gpu3 lost");
  run_for(10);
  ASSERT_EQ(1, slurm.count("signal 7"));
  now -= 3600;
  planner->shift_clock(-3600);
  run_for(19);
  EXPECT_EQ(0, slurm.count("requeue"));
  run_for(2);
  EXPECT_EQ(1, slurm.count("requeue 7")) << "30 s after the signal, not an hour later";
  start_again(7, "n[3-4]");
  run_for(1);
  auto failovers = store.failovers(key(7));
  ASSERT_EQ(1u, failovers.size());
  EXPECT_EQ(30, failovers[0].requeue_time - failovers[0].signal_time);
  EXPECT_EQ(32, failovers[0].running_again_time - failovers[0].fault_time) << "the MTTR is the time it took";
}

TEST_F(PlannerTest, AClockStepBackDoesNotStretchTheBackoff) {
  fail_over_once_and_run_again();
  now -= 3600;
  planner->shift_clock(-3600);
  end_job(7, SlurmJobState::failed, 75);
  run_for(5);
  EXPECT_EQ(1, slurm.count("requeue 7")) << "the backoff (10 s) still holds";
  run_for(10);
  EXPECT_EQ(2, slurm.count("requeue 7")) << "and counts from the step at the latest, not from an hour ahead";
}

TEST_F(PlannerTest, KeepsTheJobOffNodesItJustLeftOnlyWhenOthersCanHoldIt) {
  slurm.nodes.resize(3);  // n1..n3: after excluding the faulty n2, only n3 is fresh
  add_job(7, "n[1-2]");
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  end_job(7, SlurmJobState::failed, 1);
  pass();
  ASSERT_EQ(1, slurm.count("requeue 7"));
  long long requeued = now;
  while (slurm.count("update 7") == 0 && now < requeued + 10) run_for(1);
  EXPECT_EQ(requeued + kRevokeMargin_s, now) << "n1, which it just left, is let back after the revocation's second";
  EXPECT_NE(std::string::npos, last_update().find("exc=n2 start=now")) << last_update();
}

TEST_F(PlannerTest, LemonNodeIsQuarantinedAndReleased) {
  config.failover.lemon_faults = 3;
  planner->set_config(config);
  pass();
  for (int i = 0; i < 3; ++i) {
    drain("n4", "SaFE: gpu1 uncorrectable ECC=" + std::to_string(i + 1));
    run_for(1);
    SlurmNode* n = slurm.node("n4");
    if (i < 2) {
      n->drain = false;  // the health checker resumed it
      n->reason.clear();
      run_for(1);
    }
  }
  ASSERT_EQ(1, slurm.count("drain n4 SaFE-quarantine: 3 faults"));
  EXPECT_EQ(1u, planner->quarantined().count("n4"));
  run_for(3);
  EXPECT_EQ(1, slurm.count("drain n4")) << "quarantine is not repeated";
  EXPECT_TRUE(planner->release_node("n4", now));
  EXPECT_EQ(1, slurm.count("resume n4"));
  EXPECT_TRUE(planner->quarantined().empty());
  EXPECT_FALSE(planner->release_node("n1", now)) << "n1 was never quarantined";
}

// Slurm set n4 DOWN as not responding; the probe round chosen after that pass has its verdict.
class LostNodeTest : public PlannerTest {
 protected:
  LostNodeTest() {
    config.failover.lemon_faults = 1;  // any fault counted quarantines the node
    planner->set_config(config);
    slurm.node("n4")->addr = "10.0.0.4";
    pass();
  }
  void slurm_loses_n4() {
    SlurmNode* n = slurm.node("n4");
    n->down = n->state_down = n->not_responding = true;
    n->reason = "Not responding";
    n->reason_time = now;
    run_for(1);
  }
  void slurm_returns_n4() {
    SlurmNode* n = slurm.node("n4");
    n->down = n->state_down = n->not_responding = false;
    n->reason.clear();
    run_for(1);
  }
  void probe_n4(ProbeOutcome outcome, long long targets_pass) {
    planner->note_probe_results({{"n4", outcome, "10.0.0.4:6818"}}, targets_pass);
    run_for(1);
  }
  bool logged(const std::string& text) {
    for (const auto& line : planner->take_log())
      if (line.text.find(text) != std::string::npos) return true;
    return false;
  }
};

TEST_F(LostNodeTest, ASlurmdThatAnswersSafedWhileSlurmCannotReachItIsNoNodeFault) {
  slurm_loses_n4();
  EXPECT_EQ(std::unordered_set<std::string>{"n4"}, planner->nodes_awaiting_probe());
  EXPECT_EQ(0, slurm.count("drain n4")) << "not counted before the probe's verdict";
  probe_n4(ProbeOutcome::connected, planner->pass());
  EXPECT_TRUE(logged("node n4: not a machine fault: Slurm set it DOWN (Not responding) but its slurmd answers safed at 10.0.0.4:6818"));
  EXPECT_TRUE(planner->nodes_awaiting_probe().empty());
  run_for(5);
  EXPECT_EQ(0, slurm.count("drain n4")) << "not quarantined";
  auto faults = store.node_faults("n4", 0);
  ASSERT_EQ(1u, faults.size()) << "recorded all the same: a job that ran there failed over it";
  EXPECT_EQ(kSlurmLostContactKind, faults[0].kind);
  // A later fault of the machine counts alone: lemon_faults 2 needs another.
  config.failover.lemon_faults = 2;
  planner->set_config(config);
  slurm_returns_n4();
  drain("n4", "SaFE: gpu1 lost");
  run_for(1);
  EXPECT_EQ(0, slurm.count("drain n4 SaFE-quarantine:"));
}

TEST_F(LostNodeTest, ASlurmdThatDoesNotAnswerSafedEitherIsANodeFault) {
  slurm_loses_n4();
  probe_n4(ProbeOutcome::timed_out, planner->pass());
  EXPECT_EQ("down", store.node_faults("n4", 0).at(0).kind);
  EXPECT_EQ(1, slurm.count("drain n4 SaFE-quarantine:"));
}

TEST_F(LostNodeTest, AProbeRoundChosenBeforeSlurmLostTheNodeIsNoVerdict) {
  long long before = planner->pass();
  slurm_loses_n4();
  probe_n4(ProbeOutcome::connected, before);  // probed while n4 was still in service
  EXPECT_EQ(std::unordered_set<std::string>{"n4"}, planner->nodes_awaiting_probe());
  probe_n4(ProbeOutcome::silent, planner->pass());
  EXPECT_EQ(1, slurm.count("drain n4 SaFE-quarantine:"));
}

TEST_F(LostNodeTest, WithoutProbesSlurmsDownIsRecordedAsItComes) {
  config.controller.slurmd_probe.interval_ms = 0;
  planner->set_config(config);
  slurm_loses_n4();
  EXPECT_TRUE(planner->nodes_awaiting_probe().empty());
  EXPECT_EQ(1, slurm.count("drain n4 SaFE-quarantine:"));
}

TEST_F(LostNodeTest, ANodeBackBeforeTheVerdictLeavesNothingPending) {
  slurm_loses_n4();
  slurm_returns_n4();
  EXPECT_TRUE(planner->nodes_awaiting_probe().empty());
  probe_n4(ProbeOutcome::timed_out, planner->pass());
  EXPECT_EQ(0, slurm.count("drain n4")) << "the fault left uncounted";
}

TEST_F(PlannerTest, HealthCheckerRedrainOfAQuarantinedNodeKeepsTheQuarantine) {
  config.failover.lemon_faults = 1;
  planner->set_config(config);
  pass();
  drain("n4", "SaFE: gpu1 lost");
  run_for(1);
  ASSERT_EQ(1u, planner->quarantined().count("n4"));
  drain("n4", "SaFE: gpu1 lost");  // reason replaced by the health checker
  run_for(1);
  EXPECT_EQ(2, slurm.count("drain n4 SaFE-quarantine:"));
}

TEST_F(PlannerTest, HangWithoutOutputGrowthIsRequeuedAsInfraTransient) {
  add_job_with_hang_timeout_60();
  run_for(30);
  files.files["/out/7.log"] = {200, 0};  // progress
  run_for(40);
  EXPECT_EQ(0, slurm.count("signal"));
  run_for(25);
  EXPECT_EQ(1, slurm.count("signal 7"));
  run_for(6);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_EQ("infra_transient", store.job(key(7))->last_class);
}

// A node that died under a hung job but that Slurm has not yet set DOWN: requeueing now would
// leave the old allocation completing there, and Slurm's later DOWN would break the requeued
// job's GRES. The failover waits: it sets a node its probes found dead DOWN itself, leaves one
// that Slurm only flags not responding to Slurm, and requeues once Slurm has released the job.
class SilentNodeTest : public PlannerTest {
 protected:
  void hang_until_requeue_is_due() {
    add_job(7, "n[1-2]", "safe: retries=0/2 health=standard sig=USR1@5 hang=20 gpus=2");
    slurm.job(7)->std_out = "/out/%j.log";
    files.files["/out/7.log"] = {100, 0};
    pass();
    run_for(21);
    ASSERT_EQ(1, slurm.count("signal 7"));
    run_for(6);  // grace over
  }
  void expect_requeue_only_after_release() {
    EXPECT_EQ(1, slurm.count("down n2 SaFE-unreachable:")) << ::testing::PrintToString(slurm.calls);
    EXPECT_EQ(0, slurm.count("requeue 7")) << "the job still runs on the silent node";
    end_job(7, SlurmJobState::node_fail);  // Slurm ends it for the DOWN node
    slurm.job(7)->completing = true;
    run_for(3);
    EXPECT_EQ(0, slurm.count("requeue 7")) << "still completing: its resources are not released yet";
    slurm.job(7)->completing = false;
    run_for(1);
    expect_one_failover_away_from_n2();
    EXPECT_EQ(1, slurm.count("down n2")) << "downed once";
    EXPECT_EQ("node_fault", store.job(key(7))->last_class);
  }
  // Job 7 is requeued once, then kept off n2 as a node fault.
  void expect_one_failover_away_from_n2() {
    EXPECT_EQ(1, slurm.count("requeue 7"));
    run_for(1);
    EXPECT_NE(std::string::npos, last_update().find("exc=n2,n1")) << last_update();
    ASSERT_EQ(1u, store.failovers(key(7)).size());
    EXPECT_EQ("node_fault", store.failovers(key(7))[0].failure_class);
    EXPECT_EQ("n2", store.failovers(key(7))[0].bad_nodes);
  }
};

// Slurm's own "not responding" (a missed ping) is not enough for safed to DOWN a node: the
// requeue waits, and Slurm sets the node DOWN itself after SlurmdTimeout (or clears the flag).
TEST_F(SilentNodeTest, HangOnANodeSlurmFlagsNotRespondingWaitsForSlurmsDown) {
  slurm.node("n2")->down = slurm.node("n2")->not_responding = true;  // not yet state DOWN
  hang_until_requeue_is_due();
  run_for(5);
  EXPECT_EQ(0, slurm.count("down n2")) << ::testing::PrintToString(slurm.calls);
  EXPECT_EQ(0, slurm.count("requeue 7")) << "the job still runs on the silent node";
  slurm.node("n2")->state_down = true;  // SlurmdTimeout passed: Slurm sets it DOWN and ends the job
  end_job(7, SlurmJobState::node_fail);
  run_for(1);
  expect_one_failover_away_from_n2();
  EXPECT_EQ(0, slurm.count("down n2")) << "Slurm downed it, not safed";
}

// A missed ping that Slurm clears again: the failover goes on as if nothing had happened.
TEST_F(SilentNodeTest, ANotRespondingFlagSlurmClearsOnlyDelaysTheRequeue) {
  slurm.node("n2")->down = slurm.node("n2")->not_responding = true;
  hang_until_requeue_is_due();
  EXPECT_EQ(0, slurm.count("requeue 7"));
  slurm.node("n2")->down = slurm.node("n2")->not_responding = false;
  run_for(2);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_EQ(0, slurm.count("down n2"));
  EXPECT_EQ("infra_transient", store.failovers(key(7))[0].failure_class) << "a hang, no node at fault";
}

TEST_F(SilentNodeTest, HangOnANodeTheProbesFoundSilentDownsItBeforeTheRequeue) {
  planner->set_unanswered_nodes({"n2"});  // Slurm still thinks n2 is fine
  hang_until_requeue_is_due();
  expect_requeue_only_after_release();
}

TEST_F(SilentNodeTest, SafeDrainFailoverWaitsForANodeAlreadyDownToBeReleased) {
  add_job(7, "n[1-2]");
  pass();
  drain("n1", "SaFE: gpu0 uncorrectable ECC=2");
  slurm.node("n2")->down = slurm.node("n2")->state_down = true;  // Slurm downed it, job not yet ended
  run_for(1);
  files.checkpoints["/ck/1"] = now;
  run_for(2);
  EXPECT_EQ(0, slurm.count("down n2")) << "already DOWN in Slurm";
  EXPECT_EQ(0, slurm.count("requeue 7"));
  end_job(7, SlurmJobState::node_fail);
  run_for(1);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  run_for(1);
  EXPECT_EQ("n1,n2", store.failovers(key(7)).at(0).bad_nodes) << "the node Slurm downed is excluded too";
  EXPECT_NE(std::string::npos, last_update().find("exc=n1,n2")) << last_update();
}

// The job's output is the user's to write: printing what srun prints when Slurm cannot set up a
// step earns no retry the config does not give, even right after a failover. The words are shown.
TEST_F(PlannerTest, AJobPrintingSlurmsStepErrorAfterAFailoverIsStillItsOwnFailure) {
  add_job(7, "n[1-2]");
  slurm.job(7)->std_out = "/out/%j.log";
  pass();
  end_job(7, SlurmJobState::node_fail);
  run_for(2);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  start_again(7, "n[3-4]");
  run_for(1);
  std::string error = "srun: error: Unable to create step for job 7: Invalid generic resource (gres) specification";
  files.contents["/out/7.log"] = "step 100\n" + error + "\n";
  end_job(7, SlurmJobState::failed, 1);
  run_for(12);  // past the backoff a second failover would have
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_EQ("user_error", store.job(key(7))->last_class);
  EXPECT_NE(std::string::npos, store.job(key(7))->last_evidence.find("the job's output says: " + error))
      << store.job(key(7))->last_evidence;
}

TEST_F(PlannerTest, AStepThatCannotLaunchInAFirstAttemptIsTheUsersError) {
  add_job(7, "n[1-2]");
  slurm.job(7)->std_out = "/out/%j.log";
  pass();
  files.contents["/out/7.log"] = "srun: error: Unable to create step for job 7: Invalid generic resource (gres) specification\n";
  end_job(7, SlurmJobState::failed, 1);
  run_for(2);
  EXPECT_EQ(0, slurm.count("requeue 7"));
  EXPECT_EQ("user_error", store.job(key(7))->last_class);
}

TEST_F(PlannerTest, NonSafeJobsAreIgnored) {
  add_job(7, "n[1-2]", "an admin's note");
  pass();
  end_job(7, SlurmJobState::node_fail);
  run_for(3);
  EXPECT_TRUE(slurm.calls.empty());
  EXPECT_TRUE(planner->jobs().empty());
}

TEST_F(PlannerTest, EpilogEvidenceMakesAFailureANodeFault) {
  add_job(7, "n[1-2]");
  pass();
  files.evidence_by_job[7] = {{"n1", "epilog", "gpu_ecc uncorrectable ECC=4 on gpu0"}};
  end_job(7, SlurmJobState::failed, 1);
  run_for(2);
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_EQ("node_fault", store.job(key(7))->last_class);
}

TEST(LostWork, IsTheRunAfterTheNewestCheckpoint) {
  EXPECT_EQ(100, lost_work_s(100, 200, 0)) << "no checkpoint: all of it";
  EXPECT_EQ(50, lost_work_s(100, 200, 150));
  EXPECT_EQ(100, lost_work_s(100, 200, 90)) << "a checkpoint of an earlier attempt keeps nothing of this one";
  EXPECT_EQ(0, lost_work_s(100, 200, 200));
  EXPECT_EQ(0, lost_work_s(100, 200, 260)) << "written on the checkpoint signal after the run was counted";
  EXPECT_EQ(0, lost_work_s(200, 100, 150)) << "no run, nothing lost";
}

TEST_F(PlannerTest, EttrLeavesOutTheWorkAFailedAttemptDidAfterItsCheckpoint) {
  add_job(7, "n[1-2]");  // submitted at 900, started at 950, checkpoints into /ck/1
  pass();
  files.checkpoints["/ck/1"] = 1010;
  now = 1030;
  end_job(7, SlurmJobState::node_fail);  // 80 s run, the last 20 s after the checkpoint
  pass();
  EXPECT_EQ(80, store.job(key(7))->run_seconds);
  EXPECT_EQ(20, store.job(key(7))->lost_seconds);
  // Restarted at 1040 from the checkpoint; at 1100 the workspace has 60 s + 60 s productive of
  // 150 s since the job first ran (the 50 s it queued before that are not lost).
  now = 1040;
  pass();
  start_again(7, "n[3-4]");
  now = 1100;
  pass();
  auto times = workspace_times(*planner, now);
  EXPECT_DOUBLE_EQ(120, times["ml"].productive_s);
  EXPECT_DOUBLE_EQ(150, times["ml"].wall_s);
  EXPECT_DOUBLE_EQ(0.8, times["ml"].ettr());
  // A new planner (safed restarted) finds the first start among the job's attempts in the store.
  make_planner();
  pass();
  EXPECT_DOUBLE_EQ(150, workspace_times(*planner, now)["ml"].wall_s);
}

TEST_F(PlannerTest, EttrOfAWorkspaceWhoseJobCompletedWithoutAFailureIsOne) {
  add_job(7, "n[1-2]");  // submitted at 900, started at 950: 50 s in the queue
  pass();
  now = 1000;
  end_job(7, SlurmJobState::complete);
  pass();
  EXPECT_DOUBLE_EQ(1, workspace_times(*planner, now)["ml"].ettr());
  add_job(8, "", "safe: ws=cv retries=0/3 health=standard sig=USR1@30 hang=0 gpus=2").state =
      SlurmJobState::pending;  // Slurm's StartTime of a pending job is an estimate
  pass();
  EXPECT_EQ(0u, workspace_times(*planner, now).count("cv")) << "a job that never ran has no ETTR yet";
}

TEST_F(PlannerTest, MetricsPutAFastFailoverInItsOwnBucketAndNameTheEmptyWorkspace) {
  add_job(7, "n[1-2]", "safe: retries=0/3 health=standard sig=USR1@30 hang=0 gpus=2");  // no workspace
  pass();
  now = 1000;
  end_job(7, SlurmJobState::node_fail);
  pass();
  ASSERT_EQ(1, slurm.count("requeue 7"));
  now = 1004;
  start_again(7, "n[3-4]");
  pass();
  std::string metrics = render_metrics(*planner, ControllerHealth{}, now);
  EXPECT_NE(std::string::npos, metrics.find("safe_mttr_seconds_bucket{le=\"3\"} 0\n")) << metrics;
  EXPECT_NE(std::string::npos, metrics.find("safe_mttr_seconds_bucket{le=\"5\"} 1\n")) << metrics;
  EXPECT_NE(std::string::npos, metrics.find("safe_time_lost_seconds_total{workspace=\"(none)\"} 4\n")) << metrics;
  EXPECT_NE(std::string::npos, metrics.find("safe_ettr{workspace=\"(none)\"} ")) << metrics;
  EXPECT_EQ(std::string::npos, metrics.find("workspace=\"\"")) << metrics;
}

TEST_F(PlannerTest, EttrOfAFailoverOnTheCheckpointSignalCountsTheRunUpToTheRequeue) {
  add_job(7, "n[1-2]");
  pass();
  files.checkpoints["/ck/1"] = 960;
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(2);  // signalled at 1001
  files.checkpoints["/ck/1"] = now;  // the checkpoint the signal asked for, at 1002
  run_for(1);  // requeued at 1003
  ASSERT_EQ(1, slurm.count("requeue 7"));
  EXPECT_EQ(1003 - 950, store.job(key(7))->run_seconds);
  EXPECT_EQ(1, store.job(key(7))->lost_seconds) << "only the second after the signal's checkpoint";
  run_for(3);
  EXPECT_EQ(1, store.job(key(7))->lost_seconds) << "counted once";
}

TEST_F(PlannerTest, EttrWithoutCheckpointsCountsAFailedAttemptAsLost) {
  add_job(7, "n[1-2]", "safe: ws=ml retries=0/3 health=standard sig=USR1@30 hang=0 gpus=2");
  pass();
  now = 1050;
  end_job(7, SlurmJobState::failed, 1);
  pass();
  EXPECT_EQ(100, store.job(key(7))->run_seconds);
  EXPECT_EQ(100, store.job(key(7))->lost_seconds);
}

// Slurm gave a new job the id of an old one (its state was lost, or MaxJobId wrapped): the new
// job starts with nothing of the old one's attempts, retries or failovers.
TEST_F(PlannerTest, AReusedJobIdIsANewJob) {
  add_job(7, "n[1-2]", "safe: ws=ml retries=0/1 health=standard sig=USR1@30 hang=0 gpus=2 sub=900");
  pass();
  end_job(7, SlurmJobState::node_fail);
  run_for(2);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  start_again(7, "n[3-4]");
  run_for(1);
  end_job(7, SlurmJobState::complete);
  run_for(1);
  slurm.jobs.clear();  // purged after MinJobAge
  run_for(1);
  SlurmJob& reused = add_job(7, "n[5-6]", "safe: ws=ml retries=0/1 health=standard sig=USR1@30 hang=0 gpus=2 sub=5000");
  reused.submit_time = 5000;
  run_for(1);
  end_job(7, SlurmJobState::node_fail);
  run_for(2);
  EXPECT_EQ(2, slurm.count("requeue 7")) << "the old job's used retry is not the new job's";
  JobKey fresh{7, 5000};
  ASSERT_TRUE(store.job(fresh).has_value());
  EXPECT_EQ(1, store.job(fresh)->retries_used);
  EXPECT_EQ(1u, store.failovers(fresh).size());
  EXPECT_EQ(2u, store.attempts({7, 900}).size()) << "the old job's history is kept apart";
}

// Slurm moves a job's SubmitTime at every requeue: the job is still the same one.
TEST_F(PlannerTest, ARequeueThatMovesSlurmsSubmitTimeKeepsTheJob) {
  add_job(7, "n[1-2]", "safe: ws=ml retries=0/2 health=standard sig=USR1@30 hang=0 gpus=2 sub=900 ckpt=/ck/1");
  pass();
  end_job(7, SlurmJobState::node_fail);
  run_for(1);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  slurm.job(7)->submit_time = now;  // as slurmctld's requeue does
  run_for(1);
  start_again(7, "n[3-4]");
  run_for(1);
  JobKey k{7, 900};
  EXPECT_EQ(1u, store.failovers(k).size());
  EXPECT_EQ("done", to_string(store.failovers(k)[0].phase)) << "not given up as a job that left Slurm";
  EXPECT_GT(store.failovers(k)[0].running_again_time, 0);
}

// Reads of job files that have not answered yet (a slow file system) hold the classification
// back; nothing is decided on a partial view of the evidence.
TEST_F(PlannerTest, AFailureIsClassifiedOnlyOnceItsEvidenceIsRead) {
  add_job(7, "n[1-2]");
  pass();
  files.evidence_by_job[7] = {{"n1", "epilog", "gpu_ecc uncorrectable ECC=4 on gpu0"}};
  files.pending = true;
  end_job(7, SlurmJobState::failed, 1);
  run_for(5);
  EXPECT_TRUE(store.attempts(key(7)).back().end_state.empty()) << "not classified while reads are pending";
  EXPECT_EQ(0, slurm.count("requeue"));
  files.pending = false;
  run_for(2);
  EXPECT_EQ("node_fault", store.job(key(7))->last_class) << "the evidence read late still counts";
  EXPECT_EQ(1, slurm.count("requeue 7"));
  ASSERT_FALSE(files.forgotten.empty());
  EXPECT_EQ("7 n[1-2]", files.forgotten.front()) << "the classified attempt's evidence is deleted";
}

// An output safed cannot read (/dev/null, a file system the controller does not mount, another
// user's file) and no heartbeat is no progress signal: never "hung".
TEST_F(PlannerTest, AJobWhoseOutputSafedCannotReadIsNeverHung) {
  add_job(7, "n[1-2]", "safe: retries=0/2 health=standard sig=USR1@5 hang=20 gpus=2");
  slurm.job(7)->std_out = "/dev/null";  // not in `files`: unknown, as AsyncJobFiles answers for it
  pass();
  run_for(60);
  EXPECT_EQ(0, slurm.count("signal"));
  EXPECT_EQ(0, slurm.count("requeue"));
  // Once there is a signal (a heartbeat appears), the hang clock runs.
  files.files["/ck/2/.safe-heartbeat"] = {0, now};
  slurm.job(7)->admin_comment = "safe: retries=0/2 health=standard sig=USR1@5 hang=20 gpus=2 ckpt=/ck/2";
  run_for(25);
  EXPECT_EQ(1, slurm.count("signal 7"));
}

// %u, %N and the rest name the file the job writes: a growing file under its real name is
// progress, not a hang.
TEST_F(PlannerTest, HangDetectionWatchesTheFileSlurmstepdNamesFromThePattern) {
  planner->set_user_names([](std::uint32_t uid) { return uid == 1000 ? std::string("alice") : std::to_string(uid); });
  SlurmJob& j = add_job(7, "n[1-2]", "safe: retries=0/2 health=standard sig=USR1@5 hang=20 gpus=2");
  j.user_id = 1000;
  j.std_out = "/home/%u/o-%x-%N.%3j";
  j.batch_host = "n1";
  slurm.node("n1")->hostname = "gpu-a.example.org";
  pass();
  for (int i = 0; i < 60; ++i) {
    files.files["/home/alice/o-train-gpu-a.007"] = {100 + i, now};
    run_for(1);
  }
  EXPECT_EQ(0, slurm.count("signal")) << ::testing::PrintToString(files.read_paths.back());
}

// One tenant's jobs that keep exiting with an infrastructure code use up that tenant's share of
// the rate limit only: another's node fault fails over at once.
TEST_F(PlannerTest, ATenantsFailoverFloodNeverDelaysAnotherTenantsNodeFault) {
  planner->set_config([&] {
    SafeConfig c = config;
    c.failover.rate_limit_per_minute = 3;
    return c;
  }());
  for (std::uint32_t id = 10; id < 16; ++id) {
    SlurmJob& j = add_job(id, "n1", "safe: ws=noisy retries=0/3 health=standard sig=USR1@30 hang=0 gpus=1");
    j.num_nodes = 1;
  }
  SlurmJob& victim = add_job(7, "n[5-6]");  // ws=ml, checkpoints in /ck/1
  victim.user_id = 2000;
  pass();
  for (std::uint32_t id = 10; id < 16; ++id) end_job(id, SlurmJobState::failed, 75);
  run_for(2);
  EXPECT_EQ(3, slurm.count("requeue 1")) << "the noisy workspace gets the limit of 3 to itself";
  drain("n5", "SaFE: gpu0 uncorrectable ECC=2");
  files.checkpoints["/ck/1"] = now + 2;  // written right after the signal
  run_for(2);
  EXPECT_EQ(1, slurm.count("requeue 7")) << "a node fault waits for nobody's exit codes";
}

// A job that named its nodes (-w) and lost one of them: Slurm would keep it pending for ever on
// a node it cannot use, so the failed node leaves the required list and the others stay.
TEST_F(PlannerTest, AFailedRequiredNodeIsDroppedFromTheJobsRequiredList) {
  SlurmJob& j = add_job(7, "n[1-2]");
  j.req_nodes = "n[1-2]";
  pass();
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(1);
  files.checkpoints["/ck/1"] = now + 1;
  run_for(2);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  run_for(1);
  std::string update = last_update();
  EXPECT_NE(std::string::npos, update.find("req=n1 ")) << update;
  EXPECT_NE(std::string::npos, update.find("exc=n2 ")) << "n1 is required: never excluded, even as just left; " << update;
  EXPECT_NE(std::string::npos, update.find("n2 dropped from the required nodes")) << update;
}

// A pass that throws half way (here a file read) leaves nothing half-recorded: safed starts a new
// planner from the store, as after a crash, and the job is failed over exactly once.
class ThrowingFiles : public testing::FakeFiles {
 public:
  int throws = 0;
  Observed<std::vector<NodeFault>> epilog_evidence(std::uint32_t id, const std::vector<std::string>& nodes,
                                                   long long start, long long since) override {
    if (throws > 0) {
      --throws;
      throw std::runtime_error("disk I/O error");
    }
    return FakeFiles::epilog_evidence(id, nodes, start, since);
  }
};

TEST(PlannerCrash, APassThatFailsIsRolledBackAndTheNextPlannerFailsOverOnce) {
  testing::FakeSlurm slurm;
  for (int i = 1; i <= 4; ++i) {
    SlurmNode n;
    n.name = "n" + std::to_string(i);
    slurm.nodes.push_back(n);
  }
  ThrowingFiles files;
  StateStore store(":memory:");
  SafeConfig config;
  SlurmJob j;
  j.id = 7;
  j.name = "train";
  j.state = SlurmJobState::running;
  j.nodes = "n[1-2]";
  j.num_nodes = 2;
  j.admin_comment = "safe: ws=ml retries=0/3 health=standard sig=USR1@30 hang=0 gpus=2";
  j.submit_time = 900;
  j.start_time = 950;
  slurm.jobs.push_back(j);
  long long now = 1000;
  auto planner = std::make_unique<FailoverPlanner>(config, slurm, store, files, slurm.output_pattern_dialect());
  planner->reconcile(slurm.jobs, slurm.nodes, now);
  slurm.jobs[0].state = SlurmJobState::node_fail;
  slurm.jobs[0].end_time = ++now;
  files.throws = 1;
  EXPECT_THROW(planner->reconcile(slurm.jobs, slurm.nodes, now), std::runtime_error);
  planner = std::make_unique<FailoverPlanner>(config, slurm, store, files, slurm.output_pattern_dialect());  // what safed does
  for (int i = 0; i < 3; ++i) {
    slurm.now = ++now;
    planner->reconcile(slurm.jobs, slurm.nodes, now);
  }
  EXPECT_EQ(1, slurm.count("requeue 7"));
  EXPECT_EQ(1u, store.failovers({7, 0}).size());
}

TEST(StateStore, KeepsFailoversFaultsAndQuarantines) {
  StateStore s(":memory:");
  s.put_failover({7, 0, 0, "node_fault", "n2 ECC", "n2", FailoverPhase::signalled, 10, 11, 0, 0, 0, "ml", 16});
  s.put_failover({8, 0, 1, "infra_transient", "exit 75", "", FailoverPhase::done, 10, 0, 12, 20, 0, "ml", 8});
  ASSERT_EQ(1u, s.open_failovers().size());
  EXPECT_EQ(FailoverPhase::signalled, s.open_failovers()[0].phase);
  EXPECT_EQ(20, s.failover(key(8), 1)->running_again_time);
  EXPECT_TRUE(s.add_node_fault({"n2", 5, "safe_drain", "SaFE: x"}));
  EXPECT_FALSE(s.add_node_fault({"n2", 5, "safe_drain", "SaFE: x"})) << "same fault twice";
  EXPECT_EQ(1u, s.node_faults("n2", 0).size());
  EXPECT_TRUE(s.node_faults("n2", 6).empty());
  s.set_quarantine({"n2", 30, "SaFE-quarantine: ..."});
  EXPECT_EQ(1u, s.quarantined().size());
  s.release_quarantine("n2", 40);
  EXPECT_TRUE(s.quarantined().empty());
  EXPECT_EQ(40, s.last_release("n2"));
  JobRecord j;
  j.job_id = 7;
  j.state = SafeJobState::failing_over;
  j.user_exclude = "n9";
  j.lost_seconds = 12;
  s.put_job(j);
  EXPECT_EQ("n9", s.job(key(7))->user_exclude);
  EXPECT_EQ(SafeJobState::failing_over, s.job(key(7))->state);
  EXPECT_EQ(12, s.job(key(7))->lost_seconds);
  EXPECT_EQ(1u, s.jobs(false).size());
  s.log_action({1, key(7), "", "requeue", "", true});
  EXPECT_EQ(1u, s.actions(key(7)).size());
}

// ---- shrink and grow back (--safe-min-nodes)

TEST_F(PlannerTest, AnElasticJobShortOfNodesRunsOnFewerThenGrowsBackWhenTheyReturn) {
  two_of_four_nodes_fail_on_a_full_cluster(kElasticMeta);
  long long fault = now - 5;
  // Still waiting for 4 once failover.shrink_after_s has passed: it asks for the 2 it can have.
  while (calls_with("nodes=2") == 0 && now < fault + 60) run_for(1);
  EXPECT_EQ("update 7 nodes=2", last_update());
  EXPECT_GE(now - fault, 30);
  EXPECT_LE(now - fault, 32);
  SlurmJob* j = slurm.job(7);
  start_again(7, "n[1-2]");
  j->num_nodes = 2;
  slurm.node("n1")->busy = slurm.node("n2")->busy = true;
  run_for(20);
  EXPECT_EQ(1, slurm.count("requeue 7")) << "it runs on 2 and stays there while n3 and n4 are out";
  // n3 and n4 are repaired: a planned restart at its full size, checkpointed first.
  for (const char* n : {"n3", "n4"}) {
    slurm.node(n)->drain = false;
    slurm.node(n)->reason.clear();
  }
  run_for(1);
  EXPECT_EQ(2, slurm.count("signal 7 " + std::to_string(SIGUSR1)));
  run_for(1);
  files.checkpoints["/ck/1"] = now;  // the checkpoint on the signal
  run_for(2);
  ASSERT_EQ(2, slurm.count("requeue 7"));
  slurm.node("n1")->busy = slurm.node("n2")->busy = false;
  run_for(3);
  expect_restart_sized("4");
  std::string grow = last_update_with("comment=");
  EXPECT_EQ(std::string::npos, grow.find("exc=n3,n4")) << "the repaired nodes are the job's again: " << grow;
  EXPECT_NE(std::string::npos, grow.find("retries=1/3")) << "a grow back costs no retry: " << grow;
  EXPECT_EQ(1, planner->counters().failovers_by_class.at("grow_back"));
  std::size_t mttr_samples = planner->counters().mttr_samples.size();
  start_again(7, "n[1-4]");
  slurm.job(7)->num_nodes = 4;
  run_for(1);
  EXPECT_EQ(mttr_samples, planner->counters().mttr_samples.size()) << "a planned restart is no fault's recovery";
}

TEST_F(PlannerTest, AGrowBackIsCalledOffWhenItsFreeNodesAreTakenBeforeTheRequeue) {
  runs_shrunk_on_n1_n2();
  for (const char* n : {"n3", "n4"}) slurm.node(n)->drain = false;
  run_for(1);
  ASSERT_EQ(2, slurm.count("signal 7 " + std::to_string(SIGUSR1))) << "the grow back began";
  slurm.node("n3")->busy = true;  // another job took n3 during the grace
  files.checkpoints["/ck/1"] = now + 1;
  run_for(3);
  EXPECT_EQ(1, slurm.count("requeue 7")) << "no requeue into a size it cannot get";
  // The run goes on, and is watched as before: a fault on it now is a failover that costs a retry.
  drain("n1", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(2);
  files.checkpoints["/ck/1"] = now;
  run_for(3);
  EXPECT_EQ(2, slurm.count("requeue 7"));
  EXPECT_NE(std::string::npos, last_update_with("comment=").find("retries=2/3")) << last_update_with("comment=");
}

TEST_F(PlannerTest, AShrunkJobThatFailsAgainRestartsAtItsShrunkSizeAtOnce) {
  runs_shrunk_on_n1_n2();
  end_job(7, SlurmJobState::failed, 75);  // an infrastructure exit: n1 and n2 are healthy
  slurm.node("n1")->busy = slurm.node("n2")->busy = false;
  long long failed = now;
  slurm.calls.clear();
  while (calls_with("nodes=") == 0 && now < failed + 40) run_for(1);
  expect_restart_sized("2", "its restart asks for the 2 nodes it ran on");
  EXPECT_LT(now - failed, 30) << "it did not wait shrink_after_s at full size for nodes it cannot have";
}

TEST_F(PlannerTest, AWaitingElasticJobIsResizedAfterARestartOfSafed) {
  two_of_four_nodes_fail_on_a_full_cluster(kElasticMeta);
  make_planner();  // safed restarts while the job waits for its 4 nodes
  run_for(30);
  EXPECT_EQ("update 7 nodes=2", last_update());
}

// On a cluster a queue keeps full no node stays free for long: a shrunk job grows back onto the
// partition's free spare, its own node held through the requeue.
TEST_F(PlannerTest, AShrunkJobGrowsBackOntoAFreeSpareOnAFullCluster) {
  snapshot = true;
  full_cluster_with_one_spare("", "safe: ws=ml retries=1/3 health=standard sig=USR1@30 hang=0 gpus=0 "
                                  "elastic=2/1/1 ckpt=/ck/1");
  ASSERT_EQ(1, slurm.count("reservation safe_spares_gpu create nodes=n4"));
  // Job 7 runs shrunk on n1 (as after an earlier failover); a queued job took n2.
  SlurmJob* j = slurm.job(7);
  j->nodes = "n1";
  j->num_nodes = 1;
  j->restart_count = 1;
  j->start_time = now;
  run_for(1);
  ASSERT_EQ(1, slurm.count("signal 7 " + std::to_string(SIGUSR1))) << "the grow back began";
  run_for(1);
  files.checkpoints["/ck/1"] = now;
  run_for(2);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  EXPECT_EQ(1, slurm.count("reservation safe_spares_gpu nodes=n1,n4")) << "its own n1 held through the requeue";
  slurm.node("n1")->busy = false;
  long long requeued = now;
  while (calls_with("nodes=2") == 0 && now < requeued + 10) run_for(1);
  EXPECT_NE(std::string::npos, last_update_with("resv=").find("resv=safe_spares_gpu")) << last_update_with("resv=");
  expect_restart_sized("2");
  EXPECT_EQ(1, planner->counters().spare_placements.at("gpu"));
  run_for(2);  // it has not started yet: its size stays what its spares were given for
  EXPECT_EQ(0, calls_with("nodes=1")) << last_update();
}

TEST_F(PlannerTest, AJobWithoutMinNodesWaitsForAllItsNodes) {
  two_of_four_nodes_fail_on_a_full_cluster(kMeta);
  run_for(60);
  EXPECT_EQ(0, calls_with("nodes=")) << last_update();
}

TEST_F(PlannerTest, AWaitingElasticJobGetsItsFullSizeBackWhenTheNodesReturnFirst) {
  two_of_four_nodes_fail_on_a_full_cluster(kElasticMeta);
  run_for(30);
  ASSERT_EQ("update 7 nodes=2", last_update());
  // Before Slurm starts it on 2, n3 and n4 are back.
  for (const char* n : {"n3", "n4"}) slurm.node(n)->drain = false;
  slurm.job(7)->exc_nodes = "";
  run_for(1);
  EXPECT_EQ("update 7 nodes=4", last_update());
}

// ---- hot spares (failover.spares)

TEST_F(PlannerTest, ASpareIsReservedAndAFailingOverJobRestartsOnItAtOnce) {
  full_cluster_with_one_spare();
  EXPECT_EQ(1, slurm.count("reservation safe_spares_gpu create nodes=n4 users=root"));
  // Only the spare can complete the job after this.
  gpu_fault_ends_job_7_on_n2();
  run_for(1);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  long long requeued = now;
  while (slurm.count("update 7") == 0 && now < requeued + 10) run_for(1);
  EXPECT_EQ(1, slurm.count("reservation safe_spares_gpu nodes=n1,n2,n4 users=alice,root"))
      << "the spare, the job's own n1 (so no queued job takes it first) and the broken n2, to come back as a spare";
  std::string update = last_update();
  EXPECT_NE(std::string::npos, update.find("update 7 exc=n2 start=now resv=safe_spares_gpu")) << update;
  EXPECT_EQ(1, planner->counters().spare_placements.at("gpu"));
  // It runs on n1 and n4: the claim ends, the job leaves the reservation, and so do its nodes.
  start_again(7, "n[1,4]");
  slurm.node("n1")->busy = slurm.node("n4")->busy = true;
  run_for(1);
  EXPECT_NE(std::string::npos, last_update().find("update 7 resv=")) << last_update();
  EXPECT_EQ("n2", slurm.reservations.at(0).nodes) << "the pool keeps the broken node while it is short";
  EXPECT_EQ("root", slurm.reservations.at(0).users);
  ASSERT_EQ(1u, planner->spare_pools().count("gpu"));
  EXPECT_TRUE(planner->spare_pools().at("gpu").free.empty());
  // n2 passes its checks and is resumed: a free spare again, before any queued job saw it idle.
  slurm.node("n2")->drain = false;
  slurm.node("n2")->reason.clear();
  run_for(1);
  EXPECT_EQ(std::vector<std::string>{"n2"}, planner->spare_pools().at("gpu").free);
}

TEST_F(PlannerTest, AJobTheSparesDoNotServeWaitsInTheQueueAsBefore) {
  full_cluster_with_one_spare("research");  // job 7 is workspace ml's
  gpu_fault_ends_job_7_on_n2();
  run_for(5);
  ASSERT_EQ(1, slurm.count("update 7"));
  EXPECT_EQ(std::string::npos, last_update().find("resv=")) << last_update();
  EXPECT_EQ(0, slurm.count("reservation safe_spares_gpu nodes=")) << "the pool is untouched";
}

TEST_F(PlannerTest, WithoutSpareReadsNoSpareIsGivenAndThePoolIsLeftAlone) {
  full_cluster_with_one_spare();
  gpu_fault_ends_job_7_on_n2();
  planner->spare_inputs_failed();
  for (int i = 0; i < 5; ++i) {
    ++now;
    slurm.now = now;
    planner->reconcile(slurm.jobs, slurm.nodes, now);
  }
  ASSERT_EQ(1, slurm.count("update 7"));
  EXPECT_EQ(std::string::npos, last_update().find("resv=")) << last_update();
}

TEST_F(PlannerTest, AReservationSlurmRefusesLeavesTheJobToTheQueue) {
  full_cluster_with_one_spare();
  slurm.reservation_error = "Requested nodes are busy";
  gpu_fault_ends_job_7_on_n2();
  run_for(5);
  ASSERT_EQ(1, slurm.count("update 7"));
  EXPECT_EQ(std::string::npos, last_update().find("resv=")) << last_update();
  EXPECT_TRUE(planner->spare_claims().empty());
}

TEST_F(PlannerTest, TheJobsHealthyNodesAreHeldBeforeTheRequeueFreesThem) {
  full_cluster_with_one_spare();
  // A GPU fault under the running job: checkpoint signal, then the requeue.
  drain("n2", "SaFE: gpu0 uncorrectable ECC=2");
  run_for(40);  // the signal's grace (USR1@30) runs out: the job wrote no checkpoint
  ASSERT_EQ(1, slurm.count("requeue 7"));
  auto at = [&](const std::string& prefix) {
    return std::find_if(slurm.calls.begin(), slurm.calls.end(), [&](const std::string& c) { return c.rfind(prefix, 0) == 0; });
  };
  auto held = at("reservation safe_spares_gpu nodes=n1,n4 users=alice,root");
  ASSERT_NE(slurm.calls.end(), held) << "n1 held while the job still runs there (n2, busy winding down, joins later)";
  EXPECT_LT(held, at("requeue 7")) << "before the requeue frees n1";
}

TEST_F(PlannerTest, FreeNodesComeBeforeSpares) {
  full_cluster_with_one_spare();
  gpu_fault_ends_job_7_on_n2();
  slurm.node("n3")->busy = false;  // the other job ended: n3 is free
  while (slurm.count("requeue 7") == 0 && now < 1100) run_for(1);
  long long requeued = now;
  while (slurm.count("update 7") == 0 && now < requeued + 10) run_for(1);
  EXPECT_EQ(requeued + kRevokeMargin_s, now) << "its held n1 is a node it just left: not before the revocation's second";
  ASSERT_EQ(1, slurm.count("update 7"));
  EXPECT_EQ(0, planner->counters().spare_placements.count("gpu")) << "no spare taken";
  EXPECT_NE(std::string::npos, last_update().find("resv=safe_spares_gpu")) << "its held n1, with n3, in the reservation";
  EXPECT_NE(std::string::npos, slurm.reservations.at(0).nodes.find("n3")) << slurm.reservations.at(0).nodes;
  EXPECT_NE(std::string::npos, slurm.reservations.at(0).nodes.find("n4")) << "the spare stays free";
}

TEST_F(PlannerTest, AJobThatFailsOnItsOwnGetsNoHoldAndNoSpare) {
  full_cluster_with_one_spare();
  end_job(7, SlurmJobState::failed, 75);  // an infrastructure exit code: the job's own word
  slurm.node("n1")->busy = slurm.node("n2")->busy = false;
  run_for(5);
  ASSERT_EQ(1, slurm.count("requeue 7"));
  ASSERT_EQ(1, slurm.count("update 7"));
  EXPECT_EQ(std::string::npos, last_update().find("resv=")) << last_update();
  EXPECT_EQ(0, slurm.count("reservation safe_spares_gpu nodes=")) << "nothing held, the pool untouched";
}

TEST_F(PlannerTest, HeldNodesWaitTheRevocationsSecondEvenWhenFreeNodesCouldHoldTheJob) {
  full_cluster_with_one_spare();
  // Two more nodes, free: place_restart keeps the job off the nodes it just left and asks no
  // wait; the spare path, which restarts it on its held n1, must wait all the same.
  for (const char* name : {"n5", "n6"}) slurm.nodes.push_back(SlurmNode{}), slurm.nodes.back().name = name;
  slurm.partitions = {{"gpu", "n[1-6]", true, false}};
  pass();
  gpu_fault_ends_job_7_on_n2();
  while (slurm.count("requeue 7") == 0 && now < 1100) run_for(1);
  long long requeued = now;
  while (slurm.count("update 7") == 0 && now < requeued + 10) run_for(1);
  EXPECT_EQ(requeued + kRevokeMargin_s, now) << last_update();
  EXPECT_NE(std::string::npos, last_update().find("resv=safe_spares_gpu")) << last_update();
}

}  // namespace
}  // namespace safe
