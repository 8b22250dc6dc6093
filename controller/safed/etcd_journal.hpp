// The state store's journal in etcd (safed high availability, docs/architecture.md): the active
// instance appends each transaction's changeset as <prefix>/journal/<seq, 20 digits>, in an etcd
// transaction that succeeds only while the leader key still has the creation revision of its
// leadership (the fencing token) and the entry does not exist yet; a standby reads the entries
// after the last one its store holds. An entry over etcd's request limit goes in parts under
// <prefix>/journal-part/<seq>/<token>/<i> first (plain puts, named by the writer's token so that a
// deposed writer's late parts never mix with another's), and the fenced entry names them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "controller/safed/etcd_client.hpp"
#include "controller/safed/state_store.hpp"

namespace safe {

class EtcdJournal : public StoreJournal {
 public:
  // `part_bytes`: the largest changeset written as one value (etcd's default request limit is
  // 1.5 MiB, and base64 makes a third more of it).
  EtcdJournal(EtcdClient& etcd, std::string prefix, std::size_t part_bytes = 768 << 10);

  // Appends under the fencing token set last (0: none, every append is refused).
  void set_token(long long token) { token_ = token; }
  Status append(long long seq, const std::string& changeset) override;

  // Up to `limit` entries after `seq`, in order: (seq, changeset).
  Result<std::vector<std::pair<long long, std::string>>> entries_after(long long seq, int limit);

  std::string leader_key() const { return safe::leader_key(prefix_); }

 private:
  std::string entry_key(long long seq) const;
  Result<std::string> read_parts(long long seq, long long token, long long count);

  EtcdClient& etcd_;
  std::string prefix_;
  std::size_t part_bytes_;
  long long token_ = 0;
};

}  // namespace safe
