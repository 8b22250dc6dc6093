// safed's memory across restarts: SQLite (WAL) under controller.state_dir. Jobs, their attempts
// with classification and evidence, failovers with their phase (so a restart in the middle of one
// neither loses nor repeats a requeue), node faults, quarantines, and every action taken.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.hpp"
#include "common/slurm/model.hpp"

struct sqlite3;
struct sqlite3_stmt;
struct sqlite3_session;

namespace safe {

// Slurm reuses job ids (MaxJobId wraps; a lost StateSaveLocation starts the count again): a job
// is its id and its submission time as SaFE's admission recorded it (AdminComment sub=; Slurm's
// own SubmitTime moves at every requeue, so it cannot be the key).
struct JobKey {
  std::uint32_t id = 0;
  long long submitted = 0;  // 0 for a job whose record has no sub= (keyed by its id alone)
  auto operator<=>(const JobKey&) const = default;
};

// A job's state as SaFE sees it: Slurm's (pending, running, completed, failed, ...) and SaFE's own
// (failing_over: a failover is under way; requeued: failed over, waiting to run again; held: not
// retried, kept from running again; gone: left Slurm without an end safed saw).
enum class SafeJobState : std::uint8_t {
  pending, running, suspended, failing_over, requeued, held, completed, cancelled, failed, timeout, node_fail,
  preempted, boot_fail, deadline, out_of_memory, gone, other
};
std::string_view to_string(SafeJobState s);
SafeJobState parse_safe_job_state(std::string_view s);  // other for a name it does not know
SafeJobState safe_job_state(SlurmJobState s);

struct JobRecord {
  std::uint32_t job_id = 0;
  long long submitted = 0;    // the key's second half (JobKey)
  long long submit_time = 0;  // when it was submitted, for wall times (ETTR)
  std::uint32_t user_id = 0;  // the job's owner: the API shows a job to its owner and to admins
  std::string name, workspace;
  int max_retries = 0;
  int retries_used = 0;
  long long gpus = 0;
  SafeJobState state = SafeJobState::pending;
  std::string last_class, last_evidence;
  long long run_seconds = 0;   // summed over attempts that ended
  long long lost_seconds = 0;  // of that, work after the newest checkpoint of failed attempts
  long long end_time = 0;     // 0 while the job may still run
  std::string user_exclude;   // the job's own ExcNodeList, kept when SaFE adds bad nodes
  long long updated = 0;
  JobKey key() const { return {job_id, submitted}; }
  bool operator==(const JobRecord&) const = default;
};

// A job that ended and had run, for ETTR over time (ettr_history.hpp): its workspace, when its
// first run started, when it ended, and its run and lost seconds (JobRecord).
struct EndedJobTime {
  std::string workspace;
  long long first_start = 0, end_time = 0, run_seconds = 0, lost_seconds = 0;
};

struct AttemptRecord {
  std::uint32_t job_id = 0;
  long long submitted = 0;
  int attempt = 0;  // Slurm's restart count of the run (0 = first run)
  std::string nodes;
  long long start_time = 0, end_time = 0;
  std::string end_state, failure_class, rule, evidence;
};

// signalled: checkpoint signal sent, waiting for the grace period; requeueing: about to call (or
// called) slurm_requeue; requeued: Slurm requeued it, exclusions and start time still to set;
// done: it may run again; refused: not retried (retries exhausted), recorded on the job.
enum class FailoverPhase { waiting, signalled, requeueing, requeued, done, refused };
std::string to_string(FailoverPhase p);
FailoverPhase parse_failover_phase(const std::string& s);

struct FailoverRecord {
  std::uint32_t job_id = 0;
  long long submitted = 0;
  int attempt = 0;  // the restart count of the run that failed: the failover's idempotency key
  std::string failure_class, evidence;
  std::string bad_nodes;  // comma list
  FailoverPhase phase = FailoverPhase::waiting;
  long long fault_time = 0, signal_time = 0, requeue_time = 0, running_again_time = 0;
  long long not_before = 0;  // backoff: do not requeue before this time
  std::string workspace;
  long long gpus = 0;
  bool uses_retry = true;  // false for a run the prolog refused: it never started
  JobKey key() const { return {job_id, submitted}; }
};

// The kind of a node's fault that is not counted toward a quarantine: Slurm set the node DOWN as
// not responding while its slurmd answered safed (FailoverPlanner::nodes_awaiting_probe).
inline constexpr const char* kSlurmLostContactKind = "slurm_lost_contact";

struct NodeFaultRecord {
  std::string node;
  long long time = 0;
  std::string kind, detail;  // kind: "down", "safe_drain" or kSlurmLostContactKind
};

struct QuarantineRecord {
  std::string node;
  long long since = 0;
  std::string reason;
};

struct ActionRecord {
  long long time = 0;
  JobKey job;  // {0, 0} for an action on a node
  std::string node, action, detail;
  bool ok = true;
};

// Where a replicated store's transactions go (safed high availability, docs/architecture.md): the
// active instance appends each transaction's changes, numbered from 1, before it commits them; a
// refusal (leadership lost) rolls the transaction back. Now and then it appends the whole store
// instead (a snapshot), after which the journal may drop every earlier entry.
class StoreJournal {
 public:
  virtual ~StoreJournal() = default;
  virtual Status append(long long seq, const std::string& changeset) = 0;
  virtual Status append_snapshot(long long seq, const std::string& image) = 0;
};

class StateStore {
 public:
  // Opens or creates the store (a file, or ":memory:"), upgrading one an older safed wrote.
  // Throws std::runtime_error with a message for the admin.
  explicit StateStore(const std::string& path);
  ~StateStore();
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  void begin();
  // Throws when SQLite cannot commit; the transaction is then rolled back, never left open.
  void commit();
  // Undoes the open transaction, if any; never throws.
  void rollback() noexcept;

  // From now on every transaction that changes something is appended to `journal` (nullptr: none)
  // as one entry, SQLite's changeset of it, before it commits; writes outside begin() and commit()
  // are transactions of their own. Throws from commit() when the journal refuses the entry.
  void set_journal(StoreJournal* journal);
  // A standby's store (require = true): a transaction without a journal throws, so that nothing
  // but apply_journal_entry changes it (a write of its own would make it diverge from the journal).
  void set_require_journal(bool require) { require_journal_ = require; }
  // The number of the last journal entry this store holds (0: none).
  long long journal_seq();
  // Applies the journal entry `seq` (a standby's store, which writes no journal of its own). Throws,
  // changing nothing, when it is not the next entry or does not apply (the store diverged).
  void apply_journal_entry(long long seq, const std::string& changeset);
  // Appends the whole store to the journal as its next entry (no transaction may be open): a
  // standby with no history, or one the journal was compacted past, starts from it. Throws when
  // the journal refuses it; the store is unchanged then.
  void snapshot_to_journal();
  // Replaces the whole store with the journal's snapshot entry `seq` (one after the store's own
  // position: entries between may be gone). Throws, changing nothing, for an image that is not a
  // snapshot of entry seq - 1 or that a newer safed wrote.
  void restore_snapshot(long long seq, const std::string& image);

  void put_job(const JobRecord& j);
  std::optional<JobRecord> job(const JobKey& key);
  // Every job Slurm gave this id, the newest first.
  std::vector<JobRecord> jobs_with_id(std::uint32_t id);
  // The newest `limit` jobs; only those of `user` when set; only unfinished ones unless asked.
  std::vector<JobRecord> jobs(bool include_finished, std::optional<std::uint32_t> user = std::nullopt,
                              int limit = 1000);

  // Jobs that ended at or after `since` and had run (an attempt with a start), oldest end first.
  std::vector<EndedJobTime> ended_job_times(long long since);

  void put_attempt(const AttemptRecord& a);
  std::vector<AttemptRecord> attempts(const JobKey& key);

  void put_failover(const FailoverRecord& f);
  std::optional<FailoverRecord> failover(const JobKey& key, int attempt);
  std::vector<FailoverRecord> failovers(const JobKey& key);
  std::vector<FailoverRecord> all_failovers();
  std::vector<FailoverRecord> open_failovers();  // not done and not refused

  // False when the same fault (node, time, detail) is already recorded.
  bool add_node_fault(const NodeFaultRecord& f);
  // Sets the kind of the fault recorded for f's node, time and detail.
  void set_node_fault_kind(const NodeFaultRecord& f);
  std::vector<NodeFaultRecord> node_faults(const std::string& node, long long since);
  std::vector<NodeFaultRecord> recent_node_faults(int limit);

  void set_quarantine(const QuarantineRecord& q);
  void release_quarantine(const std::string& node, long long when);
  std::vector<QuarantineRecord> quarantined();
  long long last_release(const std::string& node);  // 0: never released

  void log_action(const ActionRecord& a);
  std::vector<ActionRecord> actions(const JobKey& key);

  // Deletes jobs that ended before `ended_before` with their attempts, failovers and actions, and
  // node faults and node actions older than it; returns the number of jobs deleted.
  long long prune(long long ended_before);

 private:
  void exec(const char* sql);
  bool has_table(const std::string& table);
  void add_column(const std::string& table, const std::string& column, const std::string& type);
  void upgrade();
  sqlite3_stmt* prepare(const std::string& sql);
  void end_session() noexcept;
  // A write's own transaction when none is open (so that the journal has it), else nothing.
  class AutoTransaction {
   public:
    explicit AutoTransaction(StateStore& s);
    ~AutoTransaction();
    void commit();

   private:
    StateStore& store_;
    bool own_;
  };
  sqlite3* db_ = nullptr;
  sqlite3_session* session_ = nullptr;
  StoreJournal* journal_ = nullptr;
  bool require_journal_ = false;
  bool applying_ = false;  // inside apply_journal_entry
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

}  // namespace safe
