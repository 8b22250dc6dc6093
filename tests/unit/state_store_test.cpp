// StateStore on a real SQLite file: a store an older safed wrote opens, upgraded, with its rows; a
// newer safed's is refused; jobs are keyed by id and submit time; a pass that fails leaves no
// transaction behind; finished jobs are pruned.
#include "controller/safed/state_store.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

namespace safe {
namespace {

class StoreFile : public ::testing::Test {
 protected:
  StoreFile() : path(std::filesystem::temp_directory_path() / ("safe-store-" + std::to_string(getpid()) + ".db")) {
    remove();
  }
  ~StoreFile() override { remove(); }
  void remove() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + suffix);
  }
  void write_with_sqlite(const char* sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(SQLITE_OK, sqlite3_open(path.c_str(), &db));
    char* err = nullptr;
    EXPECT_EQ(SQLITE_OK, sqlite3_exec(db, sql, nullptr, nullptr, &err)) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
  }
  std::filesystem::path path;
};

TEST_F(StoreFile, OpensAStoreFromBeforeLostWorkAndFreeRetriesWithItsRows) {
  write_with_sqlite(
      "CREATE TABLE jobs (job_id INTEGER PRIMARY KEY, name TEXT, workspace TEXT, submit_time "
      "INTEGER, max_retries INTEGER, retries_used INTEGER, gpus INTEGER, state TEXT, last_class "
      "TEXT, last_evidence TEXT, run_seconds INTEGER, end_time INTEGER, updated INTEGER, "
      "user_exclude TEXT);"
      "CREATE TABLE failovers (job_id INTEGER, attempt INTEGER, failure_class TEXT, evidence TEXT, "
      "bad_nodes TEXT, phase TEXT, fault_time INTEGER, signal_time INTEGER, requeue_time INTEGER, "
      "running_again_time INTEGER, not_before INTEGER, workspace TEXT, gpus INTEGER, PRIMARY KEY "
      "(job_id, attempt));"
      "INSERT INTO failovers VALUES (7, 0, 'node_fault', 'n2 down', 'n2', 'done', 1, 2, 3, 4, 5, "
      "'ml', 8);");
  {
    StateStore store(path.string());
    auto old = store.failover({7, 0}, 0);  // no job row: no submit time to key it by
    ASSERT_TRUE(old.has_value());
    EXPECT_TRUE(old->uses_retry) << "failovers before the column all used a retry";
    EXPECT_EQ("n2", old->bad_nodes);
    FailoverRecord refused = *old;
    refused.attempt = 1;
    refused.uses_retry = false;
    store.put_failover(refused);
  }
  StateStore reopened(path.string());
  EXPECT_FALSE(reopened.failover({7, 0}, 1)->uses_retry);
  EXPECT_TRUE(reopened.failover({7, 0}, 0)->uses_retry);
}

TEST_F(StoreFile, UpgradesAStoreKeyedByJobIdAloneToJobKeys) {
  write_with_sqlite(
      "CREATE TABLE jobs (job_id INTEGER PRIMARY KEY, name TEXT, workspace TEXT, submit_time INTEGER, "
      "max_retries INTEGER, retries_used INTEGER, gpus INTEGER, state TEXT, last_class TEXT, last_evidence TEXT, "
      "run_seconds INTEGER, end_time INTEGER, updated INTEGER, user_exclude TEXT, lost_seconds INTEGER DEFAULT 0);"
      "CREATE TABLE attempts (job_id INTEGER, attempt INTEGER, nodes TEXT, start_time INTEGER, end_time INTEGER, "
      "end_state TEXT, failure_class TEXT, rule TEXT, evidence TEXT, PRIMARY KEY (job_id, attempt));"
      "CREATE TABLE failovers (job_id INTEGER, attempt INTEGER, failure_class TEXT, evidence TEXT, bad_nodes TEXT, "
      "phase TEXT, fault_time INTEGER, signal_time INTEGER, requeue_time INTEGER, running_again_time INTEGER, "
      "not_before INTEGER, workspace TEXT, gpus INTEGER, uses_retry INTEGER DEFAULT 1, PRIMARY KEY (job_id, attempt));"
      "CREATE TABLE actions (time INTEGER, job_id INTEGER, node TEXT, action TEXT, detail TEXT, ok INTEGER);"
      "INSERT INTO jobs VALUES (7, 'train', 'ml', 900, 3, 1, 8, 'completed', 'node_fault', 'n2', 100, 1000, 1000, "
      "'', 10);"
      "INSERT INTO attempts VALUES (7, 0, 'n[1-2]', 950, 980, 'NODE_FAIL', 'node_fault', 'r', 'e');"
      "INSERT INTO failovers VALUES (7, 0, 'node_fault', 'n2 down', 'n2', 'done', 980, 0, 981, 985, 0, 'ml', 8, 1);"
      "INSERT INTO actions VALUES (981, 7, '', 'requeue', '', 1);"
      "INSERT INTO actions VALUES (970, 0, 'n2', 'node down', 'x', 1);");
  StateStore store(path.string());
  JobKey key{7, 0};  // keyed by the id alone, as the old store was
  EXPECT_EQ(900, store.job(key)->submit_time);
  ASSERT_TRUE(store.job(key).has_value());
  EXPECT_EQ("train", store.job(key)->name);
  EXPECT_EQ(10, store.job(key)->lost_seconds);
  ASSERT_EQ(1u, store.attempts(key).size());
  EXPECT_EQ("NODE_FAIL", store.attempts(key)[0].end_state);
  ASSERT_EQ(1u, store.failovers(key).size());
  EXPECT_EQ(985, store.failovers(key)[0].running_again_time);
  ASSERT_EQ(1u, store.actions(key).size());
  EXPECT_EQ("requeue", store.actions(key)[0].action);
  EXPECT_EQ(1u, store.actions({}).size()) << "the node's action stays a node's";
}

TEST_F(StoreFile, UpgradesAVersion2StoreGivingEveryTableAKey) {
  write_with_sqlite(
      "CREATE TABLE node_faults (node TEXT, time INTEGER, kind TEXT, detail TEXT, UNIQUE (node, time, detail));"
      "CREATE INDEX node_faults_by_node ON node_faults (node, time);"
      "CREATE TABLE actions (time INTEGER, job_id INTEGER, submitted INTEGER, node TEXT, action TEXT, detail TEXT, "
      "ok INTEGER);"
      "CREATE INDEX actions_by_job ON actions (job_id, submitted);"
      "INSERT INTO node_faults VALUES ('n2', 970, 'down', 'Not responding');"
      "INSERT INTO actions VALUES (981, 7, 900, '', 'requeue', '', 1);"
      "INSERT INTO actions VALUES (975, 7, 900, '', 'signal', '', 1);"
      "PRAGMA user_version = 2;");
  StateStore store(path.string());
  ASSERT_EQ(1u, store.node_faults("n2", 0).size());
  EXPECT_EQ("Not responding", store.node_faults("n2", 0)[0].detail);
  auto actions = store.actions({7, 900});
  ASSERT_EQ(2u, actions.size());
  EXPECT_EQ("requeue", actions[0].action) << "in the order they were logged";
  EXPECT_EQ(0, store.journal_seq());
  store.log_action({990, {7, 900}, "", "restart", "", true});
  EXPECT_EQ(3u, store.actions({7, 900}).size());
}

// A downgrade of safed to a release with an older schema: the store is refused, untouched, with
// what to do (docs/install.md, upgrade and rollback).
TEST_F(StoreFile, AStoreOfANewerSchemaIsRefusedUntouched) {
  write_with_sqlite("CREATE TABLE jobs (job_id INTEGER, future_column TEXT); PRAGMA user_version = 99;");
  try {
    StateStore store(path.string());
    FAIL() << "a store of schema 99 was opened";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("written by a newer safed (schema 99); upgrade safed or move the store aside"));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_open(path.c_str(), &db));
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &q, nullptr));
  ASSERT_EQ(SQLITE_ROW, sqlite3_step(q));
  EXPECT_EQ(99, sqlite3_column_int(q, 0)) << "the refused store is left as it was";
  sqlite3_finalize(q);
  sqlite3_close(db);
}

// The journal of a replicated store: what one store commits, another applies.
struct VectorJournal : StoreJournal {
  std::vector<std::pair<long long, std::string>> entries;
  std::vector<std::pair<long long, std::string>> snapshots;
  bool refuse = false;
  Status append(long long seq, const std::string& changeset) override {
    if (refuse) return Error{"not the leader"};
    entries.emplace_back(seq, changeset);
    return ok_status();
  }
  Status append_snapshot(long long seq, const std::string& image) override {
    if (refuse) return Error{"not the leader"};
    snapshots.emplace_back(seq, image);
    return ok_status();
  }
};

JobRecord job_record(std::uint32_t id) {
  JobRecord j;
  j.job_id = id;
  j.submitted = 900;
  j.name = "train";
  j.state = SafeJobState::running;
  return j;
}

TEST(StoreJournal, AStandbyThatAppliesTheJournalHoldsWhatTheActiveCommitted) {
  VectorJournal journal;
  StateStore active(":memory:"), standby(":memory:");
  active.set_journal(&journal);
  active.begin();  // a pass
  active.put_job(job_record(7));
  FailoverRecord f;
  f.job_id = 7;
  f.submitted = 900;
  f.phase = FailoverPhase::requeued;
  active.put_failover(f);
  active.commit();
  active.begin();
  active.commit();  // a pass that changed nothing is no entry
  // Writes outside a pass are transactions of their own.
  active.log_action({981, {7, 900}, "", "requeue", "", true});
  active.add_node_fault({"n2", 970, "down", "Not responding"});
  active.set_node_fault_kind({"n2", 970, kSlurmLostContactKind, "Not responding"});
  active.set_quarantine({"n3", 960, "SaFE-quarantine: 3 faults"});
  ASSERT_EQ(5u, journal.entries.size());
  EXPECT_EQ(5, active.journal_seq());
  for (const auto& [seq, changeset] : journal.entries) standby.apply_journal_entry(seq, changeset);
  EXPECT_EQ(5, standby.journal_seq());
  ASSERT_TRUE(standby.job({7, 900}).has_value());
  EXPECT_EQ("train", standby.job({7, 900})->name);
  ASSERT_EQ(1u, standby.failovers({7, 900}).size());
  EXPECT_EQ(FailoverPhase::requeued, standby.failovers({7, 900})[0].phase);
  ASSERT_EQ(1u, standby.actions({7, 900}).size());
  ASSERT_EQ(1u, standby.node_faults("n2", 0).size());
  EXPECT_EQ(kSlurmLostContactKind, standby.node_faults("n2", 0)[0].kind);
  ASSERT_EQ(1u, standby.quarantined().size());
  // A job that ends and is pruned: the deletes travel too.
  JobRecord ended = job_record(7);
  ended.state = SafeJobState::completed;
  ended.end_time = 1000;
  active.put_job(ended);
  EXPECT_EQ(1, active.prune(2000));
  for (std::size_t i = 5; i < journal.entries.size(); ++i)
    standby.apply_journal_entry(journal.entries[i].first, journal.entries[i].second);
  EXPECT_FALSE(standby.job({7, 900}).has_value());
  EXPECT_TRUE(standby.actions({7, 900}).empty());
}

TEST(StoreJournal, ATransactionTheJournalRefusesIsRolledBack) {
  VectorJournal journal;
  StateStore active(":memory:");
  active.set_journal(&journal);
  journal.refuse = true;
  active.begin();
  active.put_job(job_record(7));
  EXPECT_THROW(active.commit(), std::runtime_error);
  EXPECT_FALSE(active.job({7, 900}).has_value());
  EXPECT_THROW(active.log_action({981, {7, 900}, "", "requeue", "", true}), std::runtime_error);
  EXPECT_TRUE(active.actions({7, 900}).empty());
  EXPECT_EQ(0, active.journal_seq());
  journal.refuse = false;
  active.put_job(job_record(8));
  ASSERT_EQ(1u, journal.entries.size());
  EXPECT_EQ(1, journal.entries[0].first) << "numbering goes on where it stopped";
}

TEST(StoreJournal, AStandbysStoreTakesNoWriteOfItsOwn) {
  VectorJournal journal;
  StateStore active(":memory:"), standby(":memory:");
  active.set_journal(&journal);
  standby.set_require_journal(true);
  active.put_job(job_record(7));
  EXPECT_THROW(standby.log_action({981, {7, 900}, "", "node down", "", true}), std::runtime_error);
  standby.apply_journal_entry(1, journal.entries[0].second);
  EXPECT_TRUE(standby.job({7, 900}).has_value()) << "the journal still applies";
  EXPECT_THROW(standby.put_job(job_record(8)), std::runtime_error) << "and writes stay refused after it";
}

TEST(StoreJournal, AnEntryOutOfOrderOrForAStoreThatDivergedIsRefusedWhole) {
  VectorJournal journal;
  StateStore active(":memory:"), standby(":memory:"), diverged(":memory:");
  active.set_journal(&journal);
  active.put_job(job_record(7));
  active.put_job(job_record(8));
  EXPECT_THROW(standby.apply_journal_entry(2, journal.entries[1].second), std::runtime_error) << "entry 1 missing";
  EXPECT_EQ(0, standby.journal_seq());
  diverged.put_job(job_record(7));  // written by someone else
  try {
    diverged.apply_journal_entry(1, journal.entries[0].second);
    ADD_FAILURE() << "applied over a row of its own";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string::npos, std::string(e.what()).find("diverged")) << e.what();
  }
  EXPECT_EQ(0, diverged.journal_seq());
}

// A store that held history before controller.ha: its snapshot starts the journal, and a store
// with no history (or one behind the journal's oldest entry) starts from it, then follows on.
TEST(StoreJournal, ASnapshotCarriesTheWholeStoreToAStoreWithNoHistory) {
  VectorJournal journal;
  StateStore active(":memory:"), fresh(":memory:"), behind(":memory:");
  active.put_job(job_record(7));  // before HA: no journal
  active.log_action({981, {7, 900}, "", "requeue", "", true});
  active.set_journal(&journal);
  active.put_job(job_record(8));  // entry 1
  behind.apply_journal_entry(1, journal.entries[0].second);  // diverged: it never had job 7
  active.snapshot_to_journal();
  ASSERT_EQ(1u, journal.snapshots.size());
  EXPECT_EQ(2, journal.snapshots[0].first);
  EXPECT_EQ(2, active.journal_seq()) << "a snapshot moves the position, with no entry of its own";
  EXPECT_EQ(1u, journal.entries.size());
  active.put_job(job_record(9));  // entry 3
  ASSERT_EQ(3, journal.entries.back().first);

  fresh.set_require_journal(true);  // a standby's store
  fresh.restore_snapshot(2, journal.snapshots[0].second);
  EXPECT_EQ(2, fresh.journal_seq());
  fresh.apply_journal_entry(3, journal.entries.back().second);
  for (StateStore* s : {&fresh, &behind}) {
    if (s == &behind) {
      behind.restore_snapshot(2, journal.snapshots[0].second);  // entries it missed: replaced whole
      behind.apply_journal_entry(3, journal.entries.back().second);
    }
    EXPECT_EQ(3, s->journal_seq());
    for (std::uint32_t id : {7u, 8u, 9u}) EXPECT_TRUE(s->job({id, 900}).has_value()) << id;
    ASSERT_EQ(1u, s->actions({7, 900}).size());
    EXPECT_EQ("requeue", s->actions({7, 900})[0].action);
  }
  EXPECT_THROW(fresh.put_job(job_record(10)), std::runtime_error) << "still a standby's store";
}

TEST(StoreJournal, ASnapshotThatDoesNotFitIsRefusedAndChangesNothing) {
  VectorJournal journal;
  StateStore active(":memory:"), standby(":memory:");
  active.set_journal(&journal);
  active.put_job(job_record(7));
  active.snapshot_to_journal();  // entry 2
  standby.apply_journal_entry(1, journal.entries[0].second);
  standby.restore_snapshot(2, journal.snapshots[0].second);
  auto refused = [&](long long seq, const std::string& image, const char* why) {
    try {
      standby.restore_snapshot(seq, image);
      ADD_FAILURE() << "restored: " << why;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string::npos, std::string(e.what()).find(why)) << e.what();
    }
    EXPECT_EQ(2, standby.journal_seq());
    EXPECT_TRUE(standby.job({7, 900}).has_value());
  };
  refused(2, journal.snapshots[0].second, "cannot follow entry 2");
  refused(5, journal.snapshots[0].second, "holds the store at entry 1, not 4");
  refused(3, "not a database", "is not a whole database image");
  refused(3, journal.snapshots[0].second.substr(0, journal.snapshots[0].second.size() / 2), "whole database image");
  journal.refuse = true;
  EXPECT_THROW(active.snapshot_to_journal(), std::runtime_error);
  EXPECT_EQ(2, active.journal_seq()) << "a snapshot the journal refused did not move the position";
}

// The snapshot of a file store holds what its WAL holds, and restores into a file store while
// another connection reads it (safed's API has one of its own).
TEST_F(StoreFile, ASnapshotOfAFileStoreRestoresIntoAFileStoreThatIsBeingRead) {
  VectorJournal journal;
  StateStore active(path.string() + ".active");
  StateStore standby(path.string()), reader(path.string());
  active.set_journal(&journal);
  active.put_job(job_record(7));  // in the WAL, not in the file yet
  active.snapshot_to_journal();
  EXPECT_TRUE(reader.job({7, 900}) == std::nullopt);
  standby.restore_snapshot(journal.snapshots.back().first, journal.snapshots.back().second);
  EXPECT_TRUE(reader.job({7, 900}).has_value()) << "the other connection reads the restored store";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path.string() + ".active" + suffix);
  EXPECT_EQ(2, standby.journal_seq());
  sqlite3* db = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_open(path.c_str(), &db));
  sqlite3_stmt* mode = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &mode, nullptr));
  ASSERT_EQ(SQLITE_ROW, sqlite3_step(mode));
  EXPECT_STREQ("wal", reinterpret_cast<const char*>(sqlite3_column_text(mode, 0))) << "still in WAL mode";
  sqlite3_finalize(mode);
  sqlite3_close(db);
}

// The store keeps a job's state by name: every state reads back as itself, an unknown name (a
// newer safed's) as other.
TEST(StateStore, EveryJobStateIsStoredByItsName) {
  StateStore store(":memory:");
  for (int i = 0; i <= static_cast<int>(SafeJobState::other); ++i) {
    JobRecord j;
    j.job_id = 7;
    j.state = static_cast<SafeJobState>(i);
    store.put_job(j);
    EXPECT_EQ(j.state, store.job({7, 0})->state) << to_string(j.state);
  }
  EXPECT_EQ(SafeJobState::other, parse_safe_job_state("resting"));
  EXPECT_EQ(SafeJobState::node_fail, safe_job_state(SlurmJobState::node_fail));
  EXPECT_EQ(SafeJobState::completed, safe_job_state(SlurmJobState::complete));
}

TEST(StateStore, AReusedJobIdIsAnotherJob) {
  StateStore store(":memory:");
  JobRecord old_job;
  old_job.job_id = 7;
  old_job.submitted = 900;
  old_job.name = "old";
  old_job.end_time = 1000;
  store.put_job(old_job);
  store.put_attempt({7, 900, 0, "n1", 950, 1000, "FAILED", "user_error", "r", "e"});
  JobRecord new_job = old_job;
  new_job.submitted = 5000;
  new_job.name = "new";
  new_job.end_time = 0;
  store.put_job(new_job);
  EXPECT_EQ("old", store.job({7, 900})->name);
  EXPECT_EQ("new", store.job({7, 5000})->name);
  EXPECT_TRUE(store.attempts({7, 5000}).empty()) << "the new job inherits none of the old one's attempts";
  ASSERT_EQ(2u, store.jobs_with_id(7).size());
  EXPECT_EQ("new", store.jobs_with_id(7)[0].name) << "newest first";
}

TEST(StateStore, ABeginAfterAPassThatNeverCommittedStartsClean) {
  StateStore store(":memory:");
  store.begin();
  JobRecord j;
  j.job_id = 7;
  j.submitted = 900;
  store.put_job(j);
  // The pass failed here: no commit. The next pass must be able to record, and the failed pass's
  // writes must not become visible as if they had been decided.
  ASSERT_NO_THROW(store.begin());
  EXPECT_FALSE(store.job({7, 900}).has_value());
  j.job_id = 8;
  store.put_job(j);
  store.commit();
  EXPECT_TRUE(store.job({8, 900}).has_value());
}

TEST(StateStore, PruneDeletesJobsThatEndedLongAgoWithTheirHistory) {
  StateStore store(":memory:");
  for (auto [id, end] : {std::pair{1u, 100LL}, {2u, 5000LL}, {3u, 0LL}}) {
    JobRecord j;
    j.job_id = id;
    j.submitted = 50;
    j.end_time = end;
    store.put_job(j);
    store.put_attempt({id, 50, 0, "n1", 60, end, "FAILED", "", "", ""});
    store.put_failover({id, 50, 0, "node_fault", "", "n1", FailoverPhase::done, 70, 0, 80, 90, 0, "ml", 1});
    store.log_action({70, {id, 50}, "", "requeue", "", true});
  }
  store.log_action({10, {}, "n1", "node down", "", true});
  EXPECT_TRUE(store.add_node_fault({"n1", 10, "down", "x"}));
  EXPECT_EQ(1, store.prune(1000));
  EXPECT_FALSE(store.job({1, 50}).has_value());
  EXPECT_TRUE(store.attempts({1, 50}).empty());
  EXPECT_TRUE(store.failovers({1, 50}).empty());
  EXPECT_TRUE(store.actions({1, 50}).empty());
  EXPECT_TRUE(store.job({2, 50}).has_value()) << "ended after the cut";
  EXPECT_TRUE(store.job({3, 50}).has_value()) << "still running";
  EXPECT_EQ(1u, store.attempts({3, 50}).size());
  EXPECT_TRUE(store.actions({}).empty());
  EXPECT_TRUE(store.node_faults("n1", 0).empty());
}

TEST(StateStore, JobsCanBeListedForOneUser) {
  StateStore store(":memory:");
  for (auto [id, uid] : {std::pair{1u, 1000u}, {2u, 1001u}, {3u, 1000u}}) {
    JobRecord j;
    j.job_id = id;
    j.submitted = id;
    j.submit_time = id;
    j.user_id = uid;
    store.put_job(j);
  }
  EXPECT_EQ(3u, store.jobs(true).size());
  auto mine = store.jobs(true, 1000u);
  ASSERT_EQ(2u, mine.size());
  EXPECT_EQ(3u, mine[0].job_id);
  EXPECT_EQ(1u, mine[1].job_id);
}

}  // namespace
}  // namespace safe
