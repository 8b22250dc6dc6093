// The state store's journal in etcd (safed high availability, docs/architecture.md): the active
// instance appends each transaction's changeset as <prefix>/journal/<seq, 20 digits>, in an etcd
// transaction that succeeds only while the leader key still has the creation revision of its
// leadership (the fencing token) and the entry does not exist yet; a standby reads the entries
// after the last one its store holds. An entry over etcd's request limit goes in parts under
// <prefix>/journal-part/<seq>/<token>/<i> first (plain puts, named by the writer's token so that a
// deposed writer's late parts never mix with another's), and the fenced entry names them.
// A snapshot (the whole store, in parts) is an entry too: the transaction that writes it deletes
// every entry before it and their parts, so the journal always starts with the newest snapshot
// (or, until the first, with entry 1).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/safed/etcd_client.hpp"
#include "controller/safed/state_store.hpp"

namespace safe {

struct JournalEntry {
  long long seq = 0;
  bool snapshot = false;  // data: the whole store's image (StateStore::restore_snapshot), else a changeset
  std::string data;
};

class EtcdJournal : public StoreJournal {
 public:
  // `part_bytes`: the largest changeset written as one value (etcd's default request limit is
  // 1.5 MiB, and base64 makes a third more of it).
  EtcdJournal(EtcdClient& etcd, std::string prefix, std::size_t part_bytes = 768 << 10);

  // Appends under the fencing token set last (0: none, every append is refused).
  void set_token(long long token) { token_ = token; }
  Status append(long long seq, const std::string& changeset) override;
  // Appends the snapshot `seq` and drops every entry before it, in one fenced transaction.
  Status append_snapshot(long long seq, const std::string& image) override;

  // Up to `limit` entries after `seq`, in order.
  Result<std::vector<JournalEntry>> entries_after(long long seq, int limit);
  // The oldest entry's number (the newest snapshot's, once there is one); nullopt: no entry.
  Result<std::optional<long long>> oldest_seq();

  std::string leader_key() const { return safe::leader_key(prefix_); }

 private:
  std::string entry_key(long long seq) const;
  std::string parts_dir(long long seq, long long token) const;
  // Writes `data` in parts of part_bytes_ under parts_dir(seq, token_); returns how many.
  Result<long long> write_parts(long long seq, const std::string& data);
  // Puts entry `seq` = `value` if this safed still holds the leader key under token_ and the
  // entry does not exist yet, with `more` (etcd txn request operations, JSON) in the same step.
  Status fenced_put(long long seq, const std::string& value, const std::string& more = "");
  // The parts of entry `seq` as of etcd's `revision` (0: the latest).
  Result<std::string> read_parts(long long seq, long long token, long long count, long long revision);
  // Up to `limit` keys in [from, to) with their values (or without: keys_only) as of `revision`
  // (0: the latest), as etcd answers.
  Result<Json> range(const std::string& from, const std::string& to, int limit, bool keys_only = false,
                     long long revision = 0);

  EtcdClient& etcd_;
  std::string prefix_;
  std::size_t part_bytes_;
  long long token_ = 0;
};

}  // namespace safe
