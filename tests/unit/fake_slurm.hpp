// One fake Slurm for every unit test: a little slurmctld in memory (jobs, nodes, licenses,
// partitions) behind every role of the Slurm seam (reading the cluster; acting on jobs and nodes;
// submitting and cancelling; the node programs' drain, resume, requeue and cancel), changing its
// jobs and nodes as slurmctld would and recording every call for the tests to check:
// "requeue 7", "signal 7 10", "update 7 exc=... start=... comment=...", "drain n1 REASON",
// "down n1 REASON", "resume n1", "read n1", "submit NAME", "cancel 7".
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/slurm/client.hpp"
#include "common/slurm/node_control.hpp"
#include "controller/safed/job_files.hpp"

namespace safe::testing {

class FakeSlurm : public SlurmClient, public SlurmNodeControl {
 public:
  std::vector<SlurmJob> jobs;
  std::vector<SlurmNode> nodes;
  std::vector<SlurmLicense> licenses;
  std::vector<SlurmPartition> partitions;
  std::vector<SlurmReservation> reservations;
  std::string reservation_error;  // non-empty: slurmctld refuses every reservation change with this
  std::vector<std::string> calls;
  bool reachable = true;             // false: every read fails, as when slurmctld does not answer
  bool crash_after_requeue = false;  // simulates safed dying right after Slurm requeued the job
  std::string requeue_error;         // non-empty: slurmctld refuses every requeue with this error
  long long now = 1000;
  // Submissions: what was submitted, the next job id, and a policy standing in for
  // job_submit_safe (the reason it refuses a request, as Slurm's access denied; nullopt: accepted).
  std::vector<SlurmJobRequest> submitted;
  std::uint32_t next_id = 100;
  bool cancel_ignored = false;  // cancels answered but not done
  std::function<std::optional<std::string>(const SlurmJobRequest&)> policy;
  std::string reject;  // non-empty: every submission fails with this (not a refusal)
  bool batch = true;   // requeue_job works for batch jobs only (the prolog's refusal of an srun)
  std::function<void()> on_drain;  // runs as a drain arrives, to look at what was done before it
  std::function<void()> after_read;  // runs once a node's state was read: another writer acting then

  SlurmJob* job(std::uint32_t id) {
    for (auto& j : jobs)
      if (j.id == id) return &j;
    return nullptr;
  }
  SlurmNode* node(const std::string& name) {
    for (auto& n : nodes)
      if (n.name == name) return &n;
    return nullptr;
  }
  SlurmNode& add_node(const std::string& name, const std::string& state = "IDLE", const std::string& reason = "") {
    SlurmNode n;
    n.name = name;
    n.state = state;
    n.busy = state.starts_with("ALLOC") || state.starts_with("MIXED") || state.find("COMPLETING") != std::string::npos;
    n.drain = state.find("DRAIN") != std::string::npos;
    n.down = n.state_down = state.starts_with("DOWN") || state.find("FAIL") != std::string::npos;
    n.reason = reason;
    nodes.push_back(n);
    return nodes.back();
  }
  int count(const std::string& prefix) const {
    int n = 0;
    for (const auto& c : calls) n += c.rfind(prefix, 0) == 0 ? 1 : 0;
    return n;
  }

  // ---- reading the cluster
  Result<std::vector<SlurmJob>> load_jobs() override {
    if (!reachable) return Error{"unreachable"};
    return jobs;
  }
  Result<std::vector<SlurmNode>> load_nodes() override {
    if (!reachable) return Error{"unreachable"};
    return nodes;
  }
  Result<std::vector<SlurmLicense>> load_licenses() override {
    if (!reachable) return Error{"unreachable"};
    return licenses;
  }
  Result<std::vector<SlurmPartition>> load_partitions() override {
    if (!reachable) return Error{"unreachable"};
    return partitions;
  }
  Result<std::vector<SlurmReservation>> load_reservations() override {
    if (!reachable) return Error{"unreachable"};
    return reservations;
  }
  OutputPatternDialect output_pattern_dialect() const override { return OutputPatternDialect::slurmd_fname; }

  // ---- acting on jobs and nodes
  Status requeue(std::uint32_t id) override {
    calls.push_back("requeue " + std::to_string(id));
    SlurmJob* j = job(id);
    if (!j) return Error{"Invalid job id specified"};
    if (!requeue_error.empty()) return Error{requeue_error};
    j->state = SlurmJobState::pending;
    j->completing = false;
    j->restart_count++;
    j->start_time = now + 120;  // Slurm's requeue delay
    j->submit_time = now;       // slurmctld moves SubmitTime at a requeue, too
    if (crash_after_requeue) throw std::runtime_error("crash");
    return ok_status();
  }
  Status update_job(const JobChange& c) override {
    std::string call = "update " + std::to_string(c.id);
    SlurmJob* j = job(c.id);
    if (!j) return Error{"Invalid job id specified"};
    // As slurmctld: a job's nodes and begin time change only while it is pending.
    if ((c.exc_nodes || c.req_nodes || c.start_time || c.num_nodes) && j->state != SlurmJobState::pending) {
      calls.push_back(call + " refused");
      return Error{"Job is no longer pending execution"};
    }
    if (c.exc_nodes) {
      call += " exc=" + *c.exc_nodes;
      j->exc_nodes = *c.exc_nodes;
    }
    if (c.req_nodes) {
      call += " req=" + *c.req_nodes;
      j->req_nodes = *c.req_nodes;
    }
    if (c.start_time) {
      call += " start=" + std::string(*c.start_time <= now ? "now" : "+" + std::to_string(*c.start_time - now));
      j->start_time = *c.start_time;
    }
    if (c.reservation) {
      call += " resv=" + *c.reservation;
      j->reservation = *c.reservation;
    }
    if (c.num_nodes) {
      call += " nodes=" + std::to_string(*c.num_nodes);
      j->num_nodes = *c.num_nodes;
    }
    if (c.hold) call += *c.hold ? " hold" : " release";
    if (c.admin_comment) {
      call += " comment=" + *c.admin_comment;
      j->admin_comment = *c.admin_comment;
    }
    calls.push_back(call);
    return ok_status();
  }
  Status put_reservation(const ReservationChange& c) override {
    calls.push_back("reservation " + c.name + (c.create ? " create" : "") + " nodes=" + c.nodes + " users=" + c.users);
    if (!reservation_error.empty()) return Error{reservation_error};
    SlurmReservation* r = nullptr;
    for (auto& each : reservations)
      if (each.name == c.name) r = &each;
    if (c.create != (r == nullptr)) return Error{c.create ? "Duplicate reservation name" : "Reservation not found"};
    if (!r) r = &reservations.emplace_back(SlurmReservation{c.name, "", ""});
    r->nodes = c.nodes;
    r->users = c.users;
    return ok_status();
  }
  Status signal_job(std::uint32_t id, int signo) override {
    calls.push_back("signal " + std::to_string(id) + " " + std::to_string(signo));
    return ok_status();
  }
  Status drain_node(const std::string& name, const std::string& reason) override {
    if (on_drain) on_drain();
    return set_reason("drain", name, reason, [](SlurmNode& n) {
      n.drain = true;
      if (n.state.find("DRAIN") == std::string::npos) n.state += "+DRAIN";
    });
  }
  Status resume_node(const std::string& name) override {
    calls.push_back("resume " + name);
    if (SlurmNode* n = node(name)) {
      n->drain = false;
      n->down = false;
      n->state_down = false;
      n->state = n->state.substr(0, n->state.find("+DRAIN"));
      n->reason.clear();
    }
    return ok_status();
  }
  Status down_node(const std::string& name, const std::string& reason) override {
    return set_reason("down", name, reason, [](SlurmNode& n) {
      n.down = n.state_down = n.drain = true;
      if (n.state.find("DRAIN") == std::string::npos) n.state += "+DRAIN";
    });
  }

  // ---- submitting and cancelling
  Result<std::uint32_t> submit(const SlurmJobRequest& r) override {
    calls.push_back("submit " + r.name);
    if (!reject.empty()) return Error{reject};
    if (policy)
      if (auto refusal = policy(r)) return Error{*refusal, true};
    submitted.push_back(r);
    SlurmJob j;
    j.id = next_id++;
    j.name = r.name;
    j.user_id = r.uid;
    j.state = SlurmJobState::pending;
    j.comment = r.comment;
    j.std_out = r.std_out;
    j.work_dir = r.work_dir;
    jobs.push_back(j);
    return j.id;
  }
  Status cancel(std::uint32_t id) override {
    calls.push_back("cancel " + std::to_string(id));
    if (cancel_ignored) return ok_status();  // answered, not done (a slurmctld that lost it)
    if (SlurmJob* j = job(id); j && !has_ended(*j)) j->state = SlurmJobState::cancelled;
    return ok_status();
  }

  // ---- the node programs' calls (scontrol)
  Result<NodeStatus> read(const std::string& name) override {
    calls.push_back("read " + name);
    if (!reachable) return Error{"scontrol timed out"};
    const SlurmNode* n = node(name);
    if (!n) return Error{"Node " + name + " not found"};
    NodeStatus status{name, n->state, n->reason, ""};
    if (after_read) after_read();
    return status;
  }
  Status drain(const std::string& name, const std::string& reason) override { return drain_node(name, reason); }
  Status resume(const std::string& name) override { return resume_node(name); }
  Status requeue_job(const std::string& id) override {
    calls.push_back("requeue " + id);
    if (!batch) return Error{"scontrol requeue " + id + ": Requested operation not supported on this job"};
    return ok_status();
  }
  Status cancel_job(const std::string& id) override { return cancel(static_cast<std::uint32_t>(std::stoul(id))); }

 private:
  template <class Change>
  Status set_reason(const char* call, const std::string& name, const std::string& reason, Change change) {
    calls.push_back(std::string(call) + " " + name + " " + reason);
    if (SlurmNode* n = node(name)) {
      change(*n);
      n->reason = reason;
      n->reason_time = now;
    }
    return ok_status();
  }
};

// Files as the planner sees them through AsyncJobFiles, answered at once (or, with `pending`, not
// yet: a slow or hung file system).
class FakeFiles : public JobFiles {
 public:
  std::map<std::string, FileProgress> files;     // path -> progress; missing: unknown
  std::map<std::string, long long> checkpoints;  // dir -> marker time (seconds)
  std::map<std::uint32_t, std::vector<NodeFault>> evidence_by_job;
  std::map<std::string, std::string> contents;   // path -> text, for tail()
  std::map<std::pair<std::uint32_t, int>, NodeFault> prolog_refusals;  // (job, restart count) -> refusal
  int prolog_reads = 0;
  bool pending = false;                 // every read is still under way
  std::vector<std::string> forgotten;   // "JOB HOSTLIST" per forget_evidence
  std::vector<std::string> read_paths;  // every progress() path asked for

  template <class T>
  Observed<T> answer(Observed<T> value) const {
    return pending ? Observed<T>{} : value;
  }
  Observed<FileProgress> progress(const std::string& path, uid_t, long long) override {
    read_paths.push_back(path);
    auto it = files.find(path);
    return answer(it == files.end() ? Observed<FileProgress>::unknown("missing") : Observed<FileProgress>::known(it->second));
  }
  // With `checkpoint_reads_take_a_pass`, checkpoint reads behave as DeadlineReader's: a read
  // starts when the newest answer started before `want_since` (and none is in flight), sees the
  // directory as it is then, and is answered in the next pass (`now` moves on); an answer counts
  // from `since` on.
  bool checkpoint_reads_take_a_pass = false;
  struct CheckpointRead {
    long long started = 0, value_ns = 0;
  };
  std::map<std::string, CheckpointRead> checkpoint_answers, checkpoint_reads_in_flight;
  int checkpoint_reads = 0;

  Observed<long long> newest_checkpoint_ns(const std::string& dir, const std::string&, uid_t, long long since,
                                           long long want_since) override {
    auto it = checkpoints.find(dir);
    long long on_disk = it == checkpoints.end() ? 0 : it->second * 1000000000LL;
    if (!checkpoint_reads_take_a_pass) return answer(Observed<long long>::known(on_disk));
    if (auto f = checkpoint_reads_in_flight.find(dir); f != checkpoint_reads_in_flight.end() && f->second.started < now) {
      checkpoint_answers[dir] = f->second;
      checkpoint_reads_in_flight.erase(f);
    }
    auto a = checkpoint_answers.find(dir);
    if (!checkpoint_reads_in_flight.count(dir) && (a == checkpoint_answers.end() || a->second.started < want_since)) {
      checkpoint_reads_in_flight[dir] = {now, on_disk};
      ++checkpoint_reads;
    }
    if (a != checkpoint_answers.end() && a->second.started >= since) return Observed<long long>::known(a->second.value_ns);
    return {};
  }
  // The fences asked for, as (job, attempt); each answered at once with `fence_answer`.
  std::vector<std::pair<std::uint32_t, int>> fences;
  Observed<std::string> fence_answer = Observed<std::string>::known("step-10");
  Observed<std::string> fence_attempt(const std::string&, const std::string&, uid_t, std::uint32_t id,
                                      int attempt) override {
    fences.emplace_back(id, attempt);
    return answer(fence_answer);
  }
  Observed<std::vector<NodeFault>> epilog_evidence(std::uint32_t id, const std::vector<std::string>&, long long,
                                                   long long) override {
    return answer(Observed<std::vector<NodeFault>>::known(evidence_by_job[id]));
  }
  // With `late_reads`, prolog_refusal answers as DeadlineReader does on a busy host: a read asked
  // for in one pass starts in that pass's second (`now`) and is answered in the next pass, where
  // it counts only if it started at or after what that pass asks for.
  bool late_reads = false;
  long long now = 0;
  std::map<std::pair<std::uint32_t, int>, long long> refusal_read_started;

  Observed<std::optional<NodeFault>> prolog_refusal(std::uint32_t id, int restart_count, long long since) override {
    if (pending) return {};
    if (late_reads) {
      auto started = refusal_read_started.find({id, restart_count});
      if (started == refusal_read_started.end() || started->second < since) {
        refusal_read_started[{id, restart_count}] = now;
        return {};
      }
    }
    ++prolog_reads;
    auto it = prolog_refusals.find({id, restart_count});
    return Observed<std::optional<NodeFault>>::known(it == prolog_refusals.end() ? std::nullopt
                                                                                 : std::optional<NodeFault>(it->second));
  }
  Observed<std::string> tail(const std::string& path, uid_t, std::size_t max_bytes, long long) override {
    const std::string& text = contents[path];
    return answer(Observed<std::string>::known(text.size() > max_bytes ? text.substr(text.size() - max_bytes) : text));
  }
  void forget_evidence(std::uint32_t id, const std::string& nodes) override {
    forgotten.push_back(std::to_string(id) + " " + nodes);
  }
};

}  // namespace safe::testing
