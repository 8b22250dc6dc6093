// Longer than 400 lines on purpose: every SQL statement against safed's store is in this file
// (the schema, the upgrades from each older schema, and the queries), because they change
// together; split, a schema change would touch several files that each hold half of it.
#include "controller/safed/state_store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace safe {
namespace {

// One use of a prepared statement from the store's cache (prepared once per SQL text, reset
// after each use: preparing per call dominated a pass that records thousands of jobs); binds by
// position.
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Statement& bind(long long v) {
    sqlite3_bind_int64(stmt_, ++n_, v);
    return *this;
  }
  Statement& bind(const std::string& v) {
    sqlite3_bind_text(stmt_, ++n_, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  template <class... Values>
  Statement& bind_all(const Values&... values) {
    (bind(values), ...);
    return *this;
  }
  // Runs a statement that returns no rows.
  void run() {
    while (step()) {
    }
  }
  // Every row, each read by `read`.
  template <class Read>
  auto rows(Read read) -> std::vector<decltype(read(*this))> {
    std::vector<decltype(read(*this))> out;
    while (step()) out.push_back(read(*this));
    return out;
  }
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("safed: state store: ") + sqlite3_errmsg(db_));
  }
  long long i(int col) { return sqlite3_column_int64(stmt_, col); }
  std::string s(int col) {
    auto p = sqlite3_column_text(stmt_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int n_ = 0;
};

// Schema version 3 (PRAGMA user_version): every per-job row is keyed by (job_id, submitted). The
// keyed tables are WITHOUT ROWID: one b-tree per table, ordered by the key, instead of a rowid
// table plus an index of the key to keep up on every write (the first pass writes every job).
// Finished jobs are pruned hourly by a scan, which needs no index on end_time. Every table has a
// primary key (version 3): SQLite's session extension, which makes the journal of a replicated
// store (set_journal), records changes of such tables only. journal_position holds the number of
// the last journal entry the store holds.
constexpr int kSchemaVersion = 3;
constexpr const char* kSchema = R"(
CREATE TABLE IF NOT EXISTS jobs (
  job_id INTEGER, submitted INTEGER, submit_time INTEGER, user_id INTEGER, name TEXT, workspace TEXT,
  max_retries INTEGER, retries_used INTEGER, gpus INTEGER, state TEXT, last_class TEXT, last_evidence TEXT,
  run_seconds INTEGER, lost_seconds INTEGER, end_time INTEGER, updated INTEGER, user_exclude TEXT,
  PRIMARY KEY (job_id, submitted)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attempts (
  job_id INTEGER, submitted INTEGER, attempt INTEGER, nodes TEXT, start_time INTEGER, end_time INTEGER,
  end_state TEXT, failure_class TEXT, rule TEXT, evidence TEXT, PRIMARY KEY (job_id, submitted, attempt))
  WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS failovers (
  job_id INTEGER, submitted INTEGER, attempt INTEGER, failure_class TEXT, evidence TEXT, bad_nodes TEXT,
  phase TEXT, fault_time INTEGER, signal_time INTEGER, requeue_time INTEGER, running_again_time INTEGER,
  not_before INTEGER, workspace TEXT, gpus INTEGER, uses_retry INTEGER, PRIMARY KEY (job_id, submitted, attempt))
  WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS node_faults (
  node TEXT NOT NULL, time INTEGER NOT NULL, kind TEXT, detail TEXT NOT NULL, PRIMARY KEY (node, time, detail))
  WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS quarantine (node TEXT PRIMARY KEY, since INTEGER, reason TEXT, released INTEGER);
CREATE TABLE IF NOT EXISTS actions (
  id INTEGER PRIMARY KEY, time INTEGER, job_id INTEGER, submitted INTEGER, node TEXT, action TEXT, detail TEXT,
  ok INTEGER);
CREATE INDEX IF NOT EXISTS actions_by_job ON actions (job_id, submitted);
CREATE TABLE IF NOT EXISTS journal_position (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL);
INSERT OR IGNORE INTO journal_position VALUES (1, 0);
)";

// The tables version 3 gave a primary key, set aside to be copied into their new form.
constexpr const char* kSetAsideKeyless = R"(
ALTER TABLE node_faults RENAME TO node_faults_old;
DROP INDEX IF EXISTS node_faults_by_node;
ALTER TABLE actions RENAME TO actions_old;
DROP INDEX IF EXISTS actions_by_job;
)";
constexpr const char* kCopyKeyless = R"(
INSERT OR IGNORE INTO node_faults SELECT node, time, kind, detail FROM node_faults_old;
INSERT INTO actions (time, job_id, submitted, node, action, detail, ok)
  SELECT time, job_id, submitted, node, action, detail, ok FROM actions_old ORDER BY rowid;
DROP TABLE node_faults_old;
DROP TABLE actions_old;
)";

// Version 1 (safed before job keys): rows keyed by job id alone, which is what `submitted` 0 means.
constexpr const char* kUpgradeFrom1 = R"(
ALTER TABLE jobs RENAME TO jobs_v1;
ALTER TABLE attempts RENAME TO attempts_v1;
ALTER TABLE failovers RENAME TO failovers_v1;
ALTER TABLE actions RENAME TO actions_v1;
DROP INDEX IF EXISTS actions_by_job;
ALTER TABLE node_faults RENAME TO node_faults_old;
DROP INDEX IF EXISTS node_faults_by_node;
)";
constexpr const char* kCopyFrom1 = R"(
INSERT INTO jobs SELECT job_id, 0, COALESCE(submit_time, 0), 0, name, workspace, max_retries, retries_used, gpus,
  state, last_class, last_evidence, run_seconds, COALESCE(lost_seconds, 0), end_time, updated, user_exclude
  FROM jobs_v1;
INSERT INTO attempts SELECT job_id, 0, attempt, nodes, start_time, end_time, end_state, failure_class, rule, evidence
  FROM attempts_v1;
INSERT INTO failovers SELECT job_id, 0, attempt, failure_class, evidence, bad_nodes, phase, fault_time, signal_time,
  requeue_time, running_again_time, not_before, workspace, gpus, COALESCE(uses_retry, 1) FROM failovers_v1;
INSERT INTO actions (time, job_id, submitted, node, action, detail, ok)
  SELECT time, job_id, 0, node, action, detail, ok FROM actions_v1 ORDER BY rowid;
INSERT OR IGNORE INTO node_faults SELECT node, time, kind, detail FROM node_faults_old;
DROP TABLE node_faults_old;
DROP TABLE jobs_v1;
DROP TABLE attempts_v1;
DROP TABLE failovers_v1;
DROP TABLE actions_v1;
)";
// What version 1 stores lacked in their early days, so that the copy above can read every column.
constexpr const char* kVersion1Tables = R"(
CREATE TABLE IF NOT EXISTS attempts (
  job_id INTEGER, attempt INTEGER, nodes TEXT, start_time INTEGER, end_time INTEGER, end_state TEXT,
  failure_class TEXT, rule TEXT, evidence TEXT, PRIMARY KEY (job_id, attempt));
CREATE TABLE IF NOT EXISTS failovers (
  job_id INTEGER, attempt INTEGER, failure_class TEXT, evidence TEXT, bad_nodes TEXT, phase TEXT,
  fault_time INTEGER, signal_time INTEGER, requeue_time INTEGER, running_again_time INTEGER,
  not_before INTEGER, workspace TEXT, gpus INTEGER, PRIMARY KEY (job_id, attempt));
CREATE TABLE IF NOT EXISTS actions (time INTEGER, job_id INTEGER, node TEXT, action TEXT, detail TEXT, ok INTEGER);
CREATE TABLE IF NOT EXISTS node_faults (node TEXT, time INTEGER, kind TEXT, detail TEXT);
)";

constexpr const char* kFailoverColumns =
    "job_id, submitted, attempt, failure_class, evidence, bad_nodes, phase, fault_time, signal_time, "
    "requeue_time, running_again_time, not_before, workspace, gpus, uses_retry";

FailoverRecord read_failover(Statement& q) {
  FailoverRecord f;
  f.job_id = static_cast<std::uint32_t>(q.i(0));
  f.submitted = q.i(1);
  f.attempt = static_cast<int>(q.i(2));
  f.failure_class = q.s(3);
  f.evidence = q.s(4);
  f.bad_nodes = q.s(5);
  f.phase = parse_failover_phase(q.s(6));
  f.fault_time = q.i(7);
  f.signal_time = q.i(8);
  f.requeue_time = q.i(9);
  f.running_again_time = q.i(10);
  f.not_before = q.i(11);
  f.workspace = q.s(12);
  f.gpus = q.i(13);
  f.uses_retry = q.i(14) != 0;
  return f;
}

constexpr const char* kJobColumns =
    "job_id, submitted, submit_time, user_id, name, workspace, max_retries, retries_used, gpus, state, last_class, "
    "last_evidence, run_seconds, lost_seconds, end_time, updated, user_exclude";

JobRecord read_job(Statement& q) {
  JobRecord j;
  j.job_id = static_cast<std::uint32_t>(q.i(0));
  j.submitted = q.i(1);
  j.submit_time = q.i(2);
  j.user_id = static_cast<std::uint32_t>(q.i(3));
  j.name = q.s(4);
  j.workspace = q.s(5);
  j.max_retries = static_cast<int>(q.i(6));
  j.retries_used = static_cast<int>(q.i(7));
  j.gpus = q.i(8);
  j.state = parse_safe_job_state(q.s(9));
  j.last_class = q.s(10);
  j.last_evidence = q.s(11);
  j.run_seconds = q.i(12);
  j.lost_seconds = q.i(13);
  j.end_time = q.i(14);
  j.updated = q.i(15);
  j.user_exclude = q.s(16);
  return j;
}

constexpr const char* kAttemptColumns =
    "job_id, submitted, attempt, nodes, start_time, end_time, end_state, failure_class, rule, evidence";

AttemptRecord read_attempt(Statement& q) {
  return {static_cast<std::uint32_t>(q.i(0)), q.i(1), static_cast<int>(q.i(2)), q.s(3), q.i(4), q.i(5), q.s(6),
          q.s(7), q.s(8), q.s(9)};
}
NodeFaultRecord read_fault(Statement& q) { return {q.s(0), q.i(1), q.s(2), q.s(3)}; }
QuarantineRecord read_quarantine(Statement& q) { return {q.s(0), q.i(1), q.s(2)}; }
ActionRecord read_action(Statement& q) {
  return {q.i(0), {static_cast<std::uint32_t>(q.i(1)), q.i(2)}, q.s(3), q.s(4), q.s(5), q.i(6) != 0};
}

std::string select_failovers(const char* rest) { return std::string("SELECT ") + kFailoverColumns + " FROM failovers " + rest; }

}  // namespace

std::string_view to_string(SafeJobState s) {
  switch (s) {
    case SafeJobState::pending: return "pending";
    case SafeJobState::running: return "running";
    case SafeJobState::suspended: return "suspended";
    case SafeJobState::failing_over: return "failing_over";
    case SafeJobState::requeued: return "requeued";
    case SafeJobState::held: return "held";
    case SafeJobState::completed: return "completed";
    case SafeJobState::cancelled: return "cancelled";
    case SafeJobState::failed: return "failed";
    case SafeJobState::timeout: return "timeout";
    case SafeJobState::node_fail: return "node_fail";
    case SafeJobState::preempted: return "preempted";
    case SafeJobState::boot_fail: return "boot_fail";
    case SafeJobState::deadline: return "deadline";
    case SafeJobState::out_of_memory: return "out_of_memory";
    case SafeJobState::gone: return "gone";
    case SafeJobState::other: break;
  }
  return "other";
}

SafeJobState parse_safe_job_state(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(SafeJobState::other); ++i)
    if (to_string(static_cast<SafeJobState>(i)) == s) return static_cast<SafeJobState>(i);
  return SafeJobState::other;
}

SafeJobState safe_job_state(SlurmJobState s) {
  switch (s) {
    case SlurmJobState::pending: return SafeJobState::pending;
    case SlurmJobState::running: return SafeJobState::running;
    case SlurmJobState::suspended: return SafeJobState::suspended;
    case SlurmJobState::complete: return SafeJobState::completed;
    case SlurmJobState::cancelled: return SafeJobState::cancelled;
    case SlurmJobState::failed: return SafeJobState::failed;
    case SlurmJobState::timeout: return SafeJobState::timeout;
    case SlurmJobState::node_fail: return SafeJobState::node_fail;
    case SlurmJobState::preempted: return SafeJobState::preempted;
    case SlurmJobState::boot_fail: return SafeJobState::boot_fail;
    case SlurmJobState::deadline: return SafeJobState::deadline;
    case SlurmJobState::out_of_memory: return SafeJobState::out_of_memory;
    case SlurmJobState::other: break;
  }
  return SafeJobState::other;
}

std::string to_string(FailoverPhase p) {
  switch (p) {
    case FailoverPhase::waiting: return "waiting";
    case FailoverPhase::signalled: return "signalled";
    case FailoverPhase::requeueing: return "requeueing";
    case FailoverPhase::requeued: return "requeued";
    case FailoverPhase::done: return "done";
    case FailoverPhase::refused: return "refused";
  }
  return "waiting";
}

FailoverPhase parse_failover_phase(const std::string& s) {
  for (auto p : {FailoverPhase::waiting, FailoverPhase::signalled, FailoverPhase::requeueing, FailoverPhase::requeued,
                 FailoverPhase::done, FailoverPhase::refused})
    if (to_string(p) == s) return p;
  return FailoverPhase::waiting;
}

StateStore::StateStore(const std::string& path) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error("safed: cannot open the state store " + path + ": " + msg +
                             "; check controller.state_dir");
  }
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL");
  // NORMAL in WAL mode: a commit is durable once the WAL is synced at the next checkpoint, so a
  // power loss (not a crash of safed) can lose the last transactions; docs/controller.md says
  // why that is safe: Slurm's restart count, not this store, is the failover's idempotency key.
  exec("PRAGMA synchronous=NORMAL");
  upgrade();
}

void StateStore::upgrade() {
  int version = 0;
  {
    Statement q(db_, prepare("PRAGMA user_version"));
    if (q.step()) version = static_cast<int>(q.i(0));
  }
  if (version > kSchemaVersion)
    throw std::runtime_error("safed: the state store was written by a newer safed (schema " + std::to_string(version) +
                             "); upgrade safed or move the store aside");
  if (version == kSchemaVersion) return;
  exec("BEGIN IMMEDIATE");
  try {
    if (version == 0 && has_table("jobs")) {  // version 1: before job keys, no user_version set
      exec(kVersion1Tables);
      add_column("jobs", "lost_seconds", "INTEGER DEFAULT 0");
      add_column("failovers", "uses_retry", "INTEGER DEFAULT 1");
      exec(kUpgradeFrom1);
      exec(kSchema);
      exec(kCopyFrom1);
    } else if (version == 2) {
      exec(kSetAsideKeyless);
      exec(kSchema);
      exec(kCopyKeyless);
    } else {
      exec(kSchema);
    }
    exec(("PRAGMA user_version = " + std::to_string(kSchemaVersion)).c_str());
    exec("COMMIT");
  } catch (...) {
    rollback();
    throw;
  }
}

bool StateStore::has_table(const std::string& table) {
  Statement q(db_, prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"));
  q.bind(table);
  return q.step();
}

void StateStore::add_column(const std::string& table, const std::string& column, const std::string& type) {
  bool has = false;
  {
    Statement q(db_, prepare("SELECT name FROM pragma_table_info('" + table + "')"));
    while (q.step()) has = has || q.s(0) == column;
  }
  if (!has) exec(("ALTER TABLE " + table + " ADD COLUMN " + column + " " + type).c_str());
}

StateStore::~StateStore() {
  rollback();
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

sqlite3_stmt* StateStore::prepare(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK)
    throw std::runtime_error(std::string("safed: state store: ") + sqlite3_errmsg(db_));
  statements_.emplace(sql, stmt);
  return stmt;
}

void StateStore::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "error";
    sqlite3_free(err);
    throw std::runtime_error("safed: state store: " + msg);
  }
}

void StateStore::begin() {
  rollback();  // a transaction a failed pass left open must not swallow this one
  if (require_journal_ && !journal_ && !applying_)
    throw std::runtime_error("safed: state store: this safed is not the active one: its store changes by the journal only");
  exec("BEGIN");
  if (!journal_) return;
  if (sqlite3session_create(db_, "main", &session_) != SQLITE_OK || sqlite3session_attach(session_, nullptr) != SQLITE_OK) {
    rollback();
    throw std::runtime_error("safed: state store: cannot record the transaction's changes for the journal");
  }
}

void StateStore::commit() {
  try {
    if (session_ && !sqlite3session_isempty(session_)) {
      long long seq = journal_seq() + 1;
      Statement(db_, prepare("UPDATE journal_position SET seq = ?")).bind_all(seq).run();
      int size = 0;
      void* data = nullptr;
      if (sqlite3session_changeset(session_, &size, &data) != SQLITE_OK)
        throw std::runtime_error("safed: state store: cannot make the journal entry of a transaction");
      std::string changeset(static_cast<const char*>(data), static_cast<std::size_t>(size));
      sqlite3_free(data);
      // Before the commit: what the journal refuses (leadership lost) never happened here either.
      Status appended = journal_->append(seq, changeset);
      if (!appended) throw std::runtime_error("safed: state store: journal entry " + std::to_string(seq) +
                                              " not written, transaction rolled back: " + appended.error());
    }
    end_session();
    exec("COMMIT");
  } catch (...) {
    // A COMMIT that fails (disk full, I/O error) can leave the transaction open: every later
    // BEGIN would then fail and safed would never record anything again.
    rollback();
    throw;
  }
}

void StateStore::rollback() noexcept {
  end_session();
  if (db_ && !sqlite3_get_autocommit(db_)) sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
}

void StateStore::end_session() noexcept {
  if (session_) sqlite3session_delete(session_);
  session_ = nullptr;
}

void StateStore::set_journal(StoreJournal* journal) {
  rollback();
  journal_ = journal;
}

long long StateStore::journal_seq() {
  Statement q(db_, prepare("SELECT seq FROM journal_position"));
  return q.step() ? q.i(0) : 0;
}

namespace {
int abort_on_conflict(void*, int, sqlite3_changeset_iter*) { return SQLITE_CHANGESET_ABORT; }
}  // namespace

void StateStore::apply_journal_entry(long long seq, const std::string& changeset) {
  if (journal_) throw std::logic_error("safed: state store: a store that writes a journal applies none");
  long long have = journal_seq();
  if (seq != have + 1)
    throw std::runtime_error("safed: state store: journal entry " + std::to_string(seq) + " cannot follow entry " +
                             std::to_string(have) + " (entries missing)");
  applying_ = true;
  struct Done {
    bool& flag;
    ~Done() { flag = false; }
  } done{applying_};
  begin();
  // The entry moves journal_position from seq - 1 to seq: a store that diverged from the
  // journal's (another writer, a lost entry) conflicts there, or on its rows, and the entry is
  // refused whole.
  int rc = sqlite3changeset_apply(db_, static_cast<int>(changeset.size()), const_cast<char*>(changeset.data()),
                                  nullptr, abort_on_conflict, nullptr);
  if (rc != SQLITE_OK) {
    rollback();
    throw std::runtime_error("safed: state store: journal entry " + std::to_string(seq) +
                             " does not apply to this store (" + sqlite3_errstr(rc) + "): it diverged from the journal");
  }
  if (journal_seq() != seq) {
    rollback();
    throw std::runtime_error("safed: state store: journal entry " + std::to_string(seq) + " does not advance the store");
  }
  commit();
}

namespace {

// A connection of its own to an empty in-memory database: a snapshot's image is made and read there.
class MemoryDatabase {
 public:
  MemoryDatabase() {
    if (sqlite3_open(":memory:", &db_) != SQLITE_OK) {
      sqlite3_close(db_);
      throw std::runtime_error("safed: state store: no memory for a snapshot");
    }
  }
  ~MemoryDatabase() { sqlite3_close(db_); }
  MemoryDatabase(const MemoryDatabase&) = delete;
  MemoryDatabase& operator=(const MemoryDatabase&) = delete;
  sqlite3* db() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

// Copies the whole of `from` into `to` (SQLite's online backup: page by page, in one step).
void copy_database(sqlite3* to, sqlite3* from, const std::string& what) {
  sqlite3_backup* backup = sqlite3_backup_init(to, "main", from, "main");
  if (!backup) throw std::runtime_error("safed: state store: " + what + ": " + sqlite3_errmsg(to));
  int rc = sqlite3_backup_step(backup, -1);
  int finished = sqlite3_backup_finish(backup);
  if (rc != SQLITE_DONE || finished != SQLITE_OK)
    throw std::runtime_error("safed: state store: " + what + ": " + sqlite3_errstr(rc != SQLITE_DONE ? rc : finished));
}

// The first value `sql` returns in `db` as text; nullopt when it fails or returns none.
std::optional<std::string> query_value(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  std::optional<std::string> out;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    out = text ? reinterpret_cast<const char*>(text) : "";
  }
  sqlite3_finalize(stmt);
  return out;
}

}  // namespace

void StateStore::snapshot_to_journal() {
  if (!journal_) throw std::logic_error("safed: state store: a store without a journal makes no snapshot");
  rollback();
  long long seq = journal_seq() + 1;
  // The image of a copy in memory: the file alone would miss what the WAL holds.
  MemoryDatabase copy;
  copy_database(copy.db(), db_, "cannot copy the store for a snapshot");
  sqlite3_int64 size = 0;
  unsigned char* data = sqlite3_serialize(copy.db(), "main", &size, 0);
  if (!data) throw std::runtime_error("safed: state store: no memory for a snapshot");
  std::string image(reinterpret_cast<const char*>(data), static_cast<std::size_t>(size));
  sqlite3_free(data);
  // The copy keeps the WAL mode of a file store in its header (bytes 18 and 19: 2), with which an
  // in-memory database cannot read it; 1 is the rollback journal's (SQLite's file format).
  if (image.size() >= 20) image[18] = image[19] = 1;
  Status appended = journal_->append_snapshot(seq, image);
  if (!appended)
    throw std::runtime_error("safed: state store: snapshot (journal entry " + std::to_string(seq) +
                             ") not written: " + appended.error());
  // The store's data did not change: no journal entry of its own (no session outside begin()).
  Statement(db_, prepare("UPDATE journal_position SET seq = ?")).bind_all(seq).run();
}

void StateStore::restore_snapshot(long long seq, const std::string& image) {
  if (journal_) throw std::logic_error("safed: state store: a store that writes a journal applies none");
  rollback();
  const std::string entry = "journal entry " + std::to_string(seq) + " (a snapshot)";
  long long have = journal_seq();
  if (seq <= have)
    throw std::runtime_error("safed: state store: " + entry + " cannot follow entry " + std::to_string(have));
  MemoryDatabase snapshot;
  auto* buffer = static_cast<unsigned char*>(sqlite3_malloc64(image.size() ? image.size() : 1));
  if (!buffer) throw std::runtime_error("safed: state store: no memory for " + entry);
  std::copy(image.begin(), image.end(), buffer);
  auto size = static_cast<sqlite3_int64>(image.size());
  // FREEONCLOSE: SQLite frees the buffer, also when this fails.
  int rc = sqlite3_deserialize(snapshot.db(), "main", buffer, size, size,
                               SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
  std::string check = rc == SQLITE_OK ? query_value(snapshot.db(), "PRAGMA quick_check").value_or(sqlite3_errmsg(snapshot.db()))
                                      : sqlite3_errstr(rc);
  if (check != "ok")
    throw std::runtime_error("safed: state store: " + entry + " is not a whole database image (" +
                             std::to_string(image.size()) + " bytes: " + check + ")");
  long long version = std::stoll(query_value(snapshot.db(), "PRAGMA user_version").value_or("0"));
  if (version > kSchemaVersion)
    throw std::runtime_error("safed: state store: " + entry + " was written by a newer safed (schema " +
                             std::to_string(version) + "); upgrade safed");
  std::string image_seq = query_value(snapshot.db(), "SELECT seq FROM journal_position").value_or("none");
  if (image_seq != std::to_string(seq - 1))
    throw std::runtime_error("safed: state store: " + entry + " holds the store at entry " + image_seq + ", not " +
                             std::to_string(seq - 1));
  copy_database(db_, snapshot.db(), "cannot replace the store with " + entry);
  upgrade();  // a snapshot an older safed wrote
  // A crash before this line leaves the store at entry seq - 1, which restores the snapshot again.
  Statement(db_, prepare("UPDATE journal_position SET seq = ?")).bind_all(seq).run();
}

StateStore::AutoTransaction::AutoTransaction(StateStore& s) : store_(s), own_(sqlite3_get_autocommit(s.db_) != 0) {
  if (own_) store_.begin();
}
StateStore::AutoTransaction::~AutoTransaction() {
  if (own_) store_.rollback();
}
void StateStore::AutoTransaction::commit() {
  if (own_) store_.commit();
  own_ = false;
}

void StateStore::put_job(const JobRecord& j) {
  AutoTransaction tx(*this);
  Statement(db_, prepare(std::string("INSERT OR REPLACE INTO jobs (") + kJobColumns +
                         ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"))
      .bind_all(j.job_id, j.submitted, j.submit_time, j.user_id, j.name, j.workspace, j.max_retries, j.retries_used, j.gpus,
                std::string(to_string(j.state)), j.last_class, j.last_evidence, j.run_seconds, j.lost_seconds, j.end_time, j.updated,
                j.user_exclude)
      .run();
  tx.commit();
}

std::optional<JobRecord> StateStore::job(const JobKey& key) {
  Statement q(db_, prepare(std::string("SELECT ") + kJobColumns + " FROM jobs WHERE job_id = ? AND submitted = ?"));
  q.bind_all(key.id, key.submitted);
  if (!q.step()) return std::nullopt;
  return read_job(q);
}

std::vector<JobRecord> StateStore::jobs_with_id(std::uint32_t id) {
  return Statement(db_, prepare(std::string("SELECT ") + kJobColumns +
                                " FROM jobs WHERE job_id = ? ORDER BY submitted DESC, submit_time DESC"))
      .bind_all(id)
      .rows(read_job);
}

std::vector<JobRecord> StateStore::jobs(bool include_finished, std::optional<std::uint32_t> user, int limit) {
  std::string sql = std::string("SELECT ") + kJobColumns + " FROM jobs WHERE (? OR end_time = 0) AND (? OR user_id = ?)" +
                    " ORDER BY submit_time DESC, job_id DESC LIMIT ?";
  return Statement(db_, prepare(sql))
      .bind_all(include_finished ? 1 : 0, user ? 0 : 1, static_cast<long long>(user.value_or(0)), limit)
      .rows(read_job);
}

std::vector<EndedJobTime> StateStore::ended_job_times(long long since) {
  return Statement(db_, prepare("SELECT j.workspace, MIN(a.start_time), j.end_time, j.run_seconds, j.lost_seconds"
                                " FROM jobs j JOIN attempts a ON a.job_id = j.job_id AND a.submitted = j.submitted"
                                " WHERE j.end_time > 0 AND j.end_time >= ? AND a.start_time > 0"
                                " GROUP BY j.job_id, j.submitted ORDER BY j.end_time, j.job_id"))
      .bind_all(since)
      .rows([](Statement& q) { return EndedJobTime{q.s(0), q.i(1), q.i(2), q.i(3), q.i(4)}; });
}

void StateStore::put_attempt(const AttemptRecord& a) {
  AutoTransaction tx(*this);
  Statement(db_, prepare(std::string("INSERT OR REPLACE INTO attempts (") + kAttemptColumns +
                         ") VALUES (?,?,?,?,?,?,?,?,?,?)"))
      .bind_all(a.job_id, a.submitted, a.attempt, a.nodes, a.start_time, a.end_time, a.end_state, a.failure_class,
                a.rule, a.evidence)
      .run();
  tx.commit();
}

std::vector<AttemptRecord> StateStore::attempts(const JobKey& key) {
  return Statement(db_, prepare(std::string("SELECT ") + kAttemptColumns +
                                " FROM attempts WHERE job_id = ? AND submitted = ? ORDER BY attempt"))
      .bind_all(key.id, key.submitted)
      .rows(read_attempt);
}

void StateStore::put_failover(const FailoverRecord& f) {
  AutoTransaction tx(*this);
  Statement(db_, prepare(std::string("INSERT OR REPLACE INTO failovers (") + kFailoverColumns +
                         ") VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"))
      .bind_all(f.job_id, f.submitted, f.attempt, f.failure_class, f.evidence, f.bad_nodes, to_string(f.phase),
                f.fault_time, f.signal_time, f.requeue_time, f.running_again_time, f.not_before, f.workspace, f.gpus,
                f.uses_retry ? 1 : 0)
      .run();
  tx.commit();
}

std::optional<FailoverRecord> StateStore::failover(const JobKey& key, int attempt) {
  Statement q(db_, prepare(select_failovers("WHERE job_id = ? AND submitted = ? AND attempt = ?")));
  q.bind_all(key.id, key.submitted, attempt);
  if (!q.step()) return std::nullopt;
  return read_failover(q);
}

std::vector<FailoverRecord> StateStore::failovers(const JobKey& key) {
  return Statement(db_, prepare(select_failovers("WHERE job_id = ? AND submitted = ? ORDER BY attempt")))
      .bind_all(key.id, key.submitted)
      .rows(read_failover);
}

std::vector<FailoverRecord> StateStore::all_failovers() {
  return Statement(db_, prepare(select_failovers("ORDER BY job_id, submitted, attempt"))).rows(read_failover);
}

std::vector<FailoverRecord> StateStore::open_failovers() {
  return Statement(db_, prepare(select_failovers("WHERE phase NOT IN ('done', 'refused') ORDER BY job_id, attempt")))
      .rows(read_failover);
}

bool StateStore::add_node_fault(const NodeFaultRecord& f) {
  AutoTransaction tx(*this);
  Statement(db_, prepare("INSERT OR IGNORE INTO node_faults VALUES (?,?,?,?)"))
      .bind_all(f.node, f.time, f.kind, f.detail)
      .run();
  bool added = sqlite3_changes(db_) > 0;
  tx.commit();
  return added;
}

void StateStore::set_node_fault_kind(const NodeFaultRecord& f) {
  AutoTransaction tx(*this);
  Statement(db_, prepare("UPDATE node_faults SET kind = ? WHERE node = ? AND time = ? AND detail = ?"))
      .bind_all(f.kind, f.node, f.time, f.detail)
      .run();
  tx.commit();
}

std::vector<NodeFaultRecord> StateStore::node_faults(const std::string& node, long long since) {
  return Statement(db_, prepare("SELECT node, time, kind, detail FROM node_faults WHERE node = ? AND time >= ? ORDER BY time"))
      .bind_all(node, since)
      .rows(read_fault);
}

std::vector<NodeFaultRecord> StateStore::recent_node_faults(int limit) {
  return Statement(db_, prepare("SELECT node, time, kind, detail FROM node_faults ORDER BY time DESC LIMIT ?"))
      .bind_all(limit)
      .rows(read_fault);
}

void StateStore::set_quarantine(const QuarantineRecord& r) {
  AutoTransaction tx(*this);
  Statement(db_, prepare("INSERT OR REPLACE INTO quarantine VALUES (?,?,?,0)")).bind_all(r.node, r.since, r.reason).run();
  tx.commit();
}

void StateStore::release_quarantine(const std::string& node, long long when) {
  AutoTransaction tx(*this);
  Statement(db_, prepare("UPDATE quarantine SET released = ? WHERE node = ? AND released = 0")).bind_all(when, node).run();
  tx.commit();
}

std::vector<QuarantineRecord> StateStore::quarantined() {
  return Statement(db_, prepare("SELECT node, since, reason FROM quarantine WHERE released = 0 ORDER BY node"))
      .rows(read_quarantine);
}

long long StateStore::last_release(const std::string& node) {
  Statement q(db_, prepare("SELECT released FROM quarantine WHERE node = ?"));
  q.bind(node);
  return q.step() ? q.i(0) : 0;
}

void StateStore::log_action(const ActionRecord& a) {
  AutoTransaction tx(*this);
  Statement(db_, prepare("INSERT INTO actions (time, job_id, submitted, node, action, detail, ok) VALUES (?,?,?,?,?,?,?)"))
      .bind_all(a.time, a.job.id, a.job.submitted, a.node, a.action, a.detail, a.ok ? 1 : 0)
      .run();
  tx.commit();
}

std::vector<ActionRecord> StateStore::actions(const JobKey& key) {
  return Statement(db_, prepare("SELECT time, job_id, submitted, node, action, detail, ok FROM actions "
                                "WHERE job_id = ? AND submitted = ? ORDER BY rowid"))
      .bind_all(key.id, key.submitted)
      .rows(read_action);
}

long long StateStore::prune(long long ended_before) {
  AutoTransaction tx(*this);
  constexpr const char* kEnded = "(SELECT job_id, submitted FROM jobs WHERE end_time > 0 AND end_time < ?)";
  for (const char* table : {"attempts", "failovers", "actions"})
    Statement(db_, prepare(std::string("DELETE FROM ") + table + " WHERE (job_id, submitted) IN " + kEnded))
        .bind_all(ended_before)
        .run();
  Statement(db_, prepare("DELETE FROM jobs WHERE end_time > 0 AND end_time < ?")).bind_all(ended_before).run();
  long long jobs = sqlite3_changes(db_);
  Statement(db_, prepare("DELETE FROM actions WHERE job_id = 0 AND time < ?")).bind_all(ended_before).run();
  Statement(db_, prepare("DELETE FROM node_faults WHERE time < ?")).bind_all(ended_before).run();
  tx.commit();
  return jobs;
}

}  // namespace safe
