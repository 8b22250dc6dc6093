// StateStore on a real SQLite file: a store an older safed wrote opens and gains the new columns.
#include "controller/safed/state_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>

namespace safe {
namespace {

TEST(StateStore, OpensAStoreFromBeforeLostWorkAndFreeRetriesWithItsRows) {
  auto path = std::filesystem::temp_directory_path() / ("safe-store-" + std::to_string(getpid()) + ".db");
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(SQLITE_OK, sqlite3_open(path.c_str(), &db));
  ASSERT_EQ(SQLITE_OK,
            sqlite3_exec(db,
                         "CREATE TABLE jobs (job_id INTEGER PRIMARY KEY, name TEXT, workspace TEXT, submit_time "
                         "INTEGER, max_retries INTEGER, retries_used INTEGER, gpus INTEGER, state TEXT, last_class "
                         "TEXT, last_evidence TEXT, run_seconds INTEGER, end_time INTEGER, updated INTEGER, "
                         "user_exclude TEXT);"
                         "CREATE TABLE failovers (job_id INTEGER, attempt INTEGER, failure_class TEXT, evidence TEXT, "
                         "bad_nodes TEXT, phase TEXT, fault_time INTEGER, signal_time INTEGER, requeue_time INTEGER, "
                         "running_again_time INTEGER, not_before INTEGER, workspace TEXT, gpus INTEGER, PRIMARY KEY "
                         "(job_id, attempt));"
                         "INSERT INTO failovers VALUES (7, 0, 'node_fault', 'n2 down', 'n2', 'done', 1, 2, 3, 4, 5, "
                         "'ml', 8);",
                         nullptr, nullptr, nullptr));
  sqlite3_close(db);
  {
    StateStore store(path.string());
    auto old = store.failover(7, 0);
    ASSERT_TRUE(old.has_value());
    EXPECT_TRUE(old->uses_retry) << "failovers before the column all used a retry";
    EXPECT_EQ("n2", old->bad_nodes);
    FailoverRecord refused = *old;
    refused.attempt = 1;
    refused.uses_retry = false;
    store.put_failover(refused);
  }
  StateStore reopened(path.string());
  EXPECT_FALSE(reopened.failover(7, 1)->uses_retry);
  EXPECT_TRUE(reopened.failover(7, 0)->uses_retry);
  std::filesystem::remove(path);
  std::filesystem::remove(path.string() + "-wal");
  std::filesystem::remove(path.string() + "-shm");
}

}  // namespace
}  // namespace safe
