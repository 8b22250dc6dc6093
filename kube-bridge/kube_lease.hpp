// Leader election among safe-kube-bridge instances with a coordination.k8s.io/v1 Lease, the way
// Kubernetes controllers elect theirs (client-go's leaderelection): the leader renews the Lease
// every retry period; a candidate takes it over only once the record has not changed for a whole
// lease duration, timed on the candidate's own monotonic clock from when it last saw a change (so
// clocks that differ between hosts do not matter); every write carries the resourceVersion it
// read, so of two writers one gets 409 Conflict. A leader that has not renewed for the renew
// deadline stops leading before any candidate can take over (renew deadline < lease duration).
//
// The Lease decides who reconciles; the API server fences what matters most: each attempt's Job
// has one name, so a Job cannot be created twice whoever believes it leads.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "kube-bridge/kube_client.hpp"

namespace safe::bridge {

struct LeaseRecord {
  std::string holder;  // holderIdentity; empty: released
  int duration_s = 0;  // leaseDurationSeconds
  std::string acquire_time;  // MicroTime, RFC 3339 (what the API shows; the election does not read it)
  std::string renew_time;
  int transitions = 0;  // leaseTransitions
  std::string resource_version;
  std::string object;  // the Lease as read (JSON): a replace keeps what others set on it
};

// The Lease object on the API server.
class LeaseApi {
 public:
  struct Answer {
    enum Kind { ok, absent, conflict, failed } kind = failed;
    LeaseRecord record;  // with kind ok: as the server has it now
    std::string error;
  };
  virtual ~LeaseApi() = default;
  virtual Answer get() = 0;
  // A create that finds the Lease made meanwhile is a conflict.
  virtual Answer create(const LeaseRecord& r) = 0;
  // A replace that the server refuses (conflict) unless r.resource_version is still current.
  virtual Answer update(const LeaseRecord& r) = 0;
};

struct LeaseTiming {
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
};

class LeaseElector {
 public:
  using Steady = std::chrono::steady_clock::time_point;
  // `clock` gives the monotonic time (read before each write and after each read), `wall_time`
  // the RFC 3339 MicroTime written into the record.
  LeaseElector(LeaseApi& api, std::string identity, LeaseTiming timing, std::function<Steady()> clock,
               std::function<std::string()> wall_time);

  // One try to acquire or renew the Lease; true when this instance leads after it.
  bool tick();
  // Leads: holds the Lease and renewed it less than the renew deadline ago.
  bool leading(Steady now) const;
  // When leading ends without another renewal (a default time point when not holding).
  Steady lead_until() const;
  // Counts the terms this instance led: a new one starts with every acquisition that does not
  // continue an unbroken lead (taken from another holder, from nobody, or after a lapse). What
  // was learnt in an earlier term is stale.
  long term() const { return term_; }
  // Gives the Lease up (holder emptied) so that a candidate takes over at its next try.
  void release();

  const std::string& identity() const { return identity_; }
  // The holder as last read (empty: none known, or released).
  const std::string& holder() const { return observed_.holder; }
  // The last error from the API server ("" after a success), for the caller to log once.
  const std::string& last_error() const { return last_error_; }

 private:
  bool acquired(const LeaseApi::Answer& a, Steady sent, bool continuing);

  LeaseApi& api_;
  std::string identity_;
  LeaseTiming timing_;
  std::function<Steady()> clock_;
  std::function<std::string()> wall_time_;
  long term_ = 0;
  LeaseRecord observed_;
  Steady observed_at_{};
  bool held_ = false;
  Steady renewed_at_{};
  std::string last_error_;
};

// The Lease NAMESPACE/NAME through the bridge's Kubernetes client.
class KubeLeaseApi : public LeaseApi {
 public:
  KubeLeaseApi(KubeClient& client, std::string namespace_, std::string name);
  Answer get() override;
  Answer create(const LeaseRecord& r) override;
  Answer update(const LeaseRecord& r) override;

 private:
  std::string manifest(const LeaseRecord& r) const;
  KubeClient& client_;
  std::string namespace_;
  std::string name_;
};

// The record in a Lease object's JSON (empty holder when the object has none), the JSON kept.
LeaseRecord parse_lease(std::string_view body);
// Now as a Kubernetes MicroTime (2026-12-03T10:00:00.123456Z).
std::string kube_micro_time_now();

}  // namespace safe::bridge
