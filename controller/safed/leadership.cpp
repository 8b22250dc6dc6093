#include "controller/safed/leadership.hpp"

#include <utility>

namespace safe {

Leadership::Leadership(LeaseStore& store, std::string key, std::string me, LeadershipPolicy policy)
    : store_(store), key_(std::move(key)), me_(std::move(me)), policy_(policy) {}

void Leadership::tick(long long now_ms) {
  if (leader_ && now_ms >= deadline_ms_) lose("its lease ran out unanswered (etcd unreachable for " +
                                              std::to_string(policy_.ttl_s) + " s)");
  if (lease_ && now_ms >= deadline_ms_) lease_ = 0;  // expired, or as good as: a new one
  if (now_ms < next_renew_ms_) return;
  next_renew_ms_ = now_ms + policy_.renew_interval_ms;
  // Counted from now, when the request leaves: etcd's TTL starts when it answers.
  long long lease_end = now_ms + policy_.ttl_s * 1000 - policy_.margin_ms;
  if (!lease_) {
    Result<long long> granted = store_.grant(policy_.ttl_s);
    if (!granted) return store_error("cannot obtain a lease", granted.error());
    lease_ = *granted;
    deadline_ms_ = lease_end;
  } else {
    Result<long long> kept = store_.keep_alive(lease_);
    if (!kept) return store_error("cannot renew its lease", kept.error());
    if (*kept <= 0) {
      lease_ = 0;
      if (leader_) lose("its lease expired in etcd");
      return;
    }
    deadline_ms_ = lease_end;
  }
  if (!announce_key_.empty() && (announced_lease_ != lease_ || announced_value_ != announce_value_)) {
    Status put = store_.put(announce_key_, announce_value_, lease_);
    if (!put) return store_error("cannot write " + announce_key_, put.error());
    announced_lease_ = lease_;
    announced_value_ = announce_value_;
  }
  Result<LeaderKey> key = store_.create_if_absent(key_, me_, lease_);
  if (!key) return store_error("cannot read or create the leader key " + key_, key.error());
  if (erring_) log_.push_back({LogPriority::notice, "safed: etcd answers again"});
  erring_ = false;
  holder_ = key->holder;
  bool ours = key->lease == lease_;
  if (ours && !leader_) {
    leader_ = true;
    token_ = key->token;
    log_.push_back({LogPriority::notice, "safed: active: holds " + key_ + " (fencing token " + std::to_string(token_) + ")"});
  } else if (!ours && leader_) {
    lose("the key " + key_ + " is held by " + key->holder);
  } else if (ours && key->token != token_) {
    // Deleted and created again under our lease (an administrator's etcdctl del): a new
    // leadership, whose writes must not pass for the old one's.
    token_ = key->token;
    log_.push_back({LogPriority::warning,
                    "safed: active: " + key_ + " created again (fencing token " + std::to_string(token_) + ")"});
  }
}

void Leadership::resign(long long now_ms, const std::string& why) {
  if (lease_) {
    Status revoked = store_.revoke(lease_);
    if (!revoked) store_error("cannot revoke its lease (it expires in " + std::to_string(policy_.ttl_s) + " s)",
                              revoked.error());
  }
  if (leader_) lose(why);
  lease_ = 0;
  // No campaign before the others had a chance: a resigning leader should not win again at once.
  next_renew_ms_ = now_ms + policy_.ttl_s * 1000;
}

void Leadership::announce(const std::string& key, const std::string& value) {
  announce_key_ = key;
  announce_value_ = value;
}

void Leadership::lose(const std::string& why) {
  leader_ = false;
  token_ = 0;
  log_.push_back({LogPriority::warning, "safed: standby: no longer active: " + why});
}

void Leadership::store_error(const std::string& what, const std::string& error) {
  if (!erring_) log_.push_back({LogPriority::warning, "safed: etcd: " + what + ": " + error});
  erring_ = true;
}

std::vector<LogEntry> Leadership::take_log() { return std::exchange(log_, {}); }

}  // namespace safe
