// Which of two safed instances is active: a lease with a fencing token in etcd
// (docs/architecture.md, "safed high availability"). An instance holds a lease it keeps alive,
// and is the leader while the leader key exists under that lease; the key's creation revision is
// the fencing token that every write of the leader to shared state is checked against.
//
// Leadership decides what to ask the store and when, and what the instance may do; the store's
// calls are behind LeaseStore (EtcdClient in safed, a fake in the unit tests). Times are the
// steady clock's, in milliseconds: a step of the wall clock changes nothing.
#pragma once

#include <string>
#include <vector>

#include "common/daemon_log.hpp"
#include "common/result.hpp"

namespace safe {

// The leader key as the store has it.
struct LeaderKey {
  std::string holder;  // its value: the leader's API URL and instance id
  long long token = 0; // its creation revision: the fencing token
  long long lease = 0; // the lease it lives under
};

class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  // A new lease of ttl_s seconds; its id.
  virtual Result<long long> grant(long long ttl_s) = 0;
  // Renews the lease; the seconds it now has, 0 when it is gone (expired or revoked).
  virtual Result<long long> keep_alive(long long lease) = 0;
  virtual Status revoke(long long lease) = 0;
  // Creates `key` = `value` under `lease` unless the key exists; the key as it is afterwards (ours,
  // or the one already there).
  virtual Result<LeaderKey> create_if_absent(const std::string& key, const std::string& value, long long lease) = 0;
  // Sets `key` = `value` under `lease` (it goes with the lease).
  virtual Status put(const std::string& key, const std::string& value, long long lease) = 0;
};

struct LeadershipPolicy {
  long long ttl_s = 3;              // the lease's time to live
  long long renew_interval_ms = 1000;  // keep-alive and campaign interval
  // The holder stops counting on its lease this long before its TTL runs out, measured from when
  // it sent the request etcd answered: etcd starts the TTL later than that, so the holder always
  // stops acting before another can take the key.
  long long margin_ms = 500;
};

class Leadership {
 public:
  Leadership(LeaseStore& store, std::string key, std::string me, LeadershipPolicy policy);

  // One step at steady time now_ms (call it about every renew_interval_ms, and before acting): a
  // lease granted or kept alive, the key created or found held by another. Store errors are
  // logged once per run of errors; leadership lasts until its deadline whatever they are.
  void tick(long long now_ms);
  // True while this instance holds the key and its lease's deadline has not passed: it may act.
  bool leading(long long now_ms) const { return leader_ && now_ms < deadline_ms_; }
  // The fencing token of this instance's leadership (0 while it is not the leader).
  long long token() const { return leader_ ? token_ : 0; }
  // The holder of the key as last seen ("" when none was seen).
  const std::string& holder() const { return holder_; }
  // Gives the key up at once (revokes the lease): another instance may take it. `why` is logged.
  void resign(long long now_ms, const std::string& why = "resigned");
  // A key kept under this instance's lease, so that it is gone when the instance is: written
  // (at the next tick) whenever the value or the lease changes. The instances tell each other
  // what they see this way (safed: whether it reaches Slurm).
  void announce(const std::string& key, const std::string& value);
  std::vector<LogEntry> take_log();

 private:
  void lose(const std::string& why);
  void store_error(const std::string& what, const std::string& error);

  LeaseStore& store_;
  std::string key_, me_;
  LeadershipPolicy policy_;
  long long lease_ = 0;
  long long deadline_ms_ = 0;  // the lease holds until then (with margin)
  long long next_renew_ms_ = 0;
  bool leader_ = false;
  long long token_ = 0;
  std::string holder_;
  bool erring_ = false;
  std::string announce_key_, announce_value_;
  long long announced_lease_ = 0;  // the lease the announcement was last written under
  std::string announced_value_;
  std::vector<LogEntry> log_;
};

}  // namespace safe
