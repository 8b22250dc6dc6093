#include "kube-bridge/kube_lease.hpp"

#include <sys/time.h>

#include <cstdio>
#include <ctime>

#include "common/json_value.hpp"
#include "kube-bridge/kube_observations.hpp"

namespace safe::bridge {

LeaseElector::LeaseElector(LeaseApi& api, std::string identity, LeaseTiming timing, std::function<Steady()> clock,
                           std::function<std::string()> wall_time)
    : api_(api), identity_(std::move(identity)), timing_(timing), clock_(std::move(clock)),
      wall_time_(std::move(wall_time)) {}

bool LeaseElector::leading(Steady now) const { return held_ && now < lead_until(); }

LeaseElector::Steady LeaseElector::lead_until() const { return held_ ? renewed_at_ + timing_.renew_deadline : Steady{}; }

// `sent`: when the write was sent. The lead counts from then, not from the answer: the server may
// have applied the write at any moment in between, and candidates time from what they read.
bool LeaseElector::acquired(const LeaseApi::Answer& a, Steady sent, bool continuing) {
  switch (a.kind) {
    case LeaseApi::Answer::ok:
      if (!continuing) ++term_;
      held_ = true;
      renewed_at_ = sent;
      observed_ = a.record;
      observed_at_ = clock_();
      last_error_.clear();
      return true;
    case LeaseApi::Answer::conflict:
    case LeaseApi::Answer::absent:
      // Another instance wrote first: it holds the Lease now, whatever this one believed.
      held_ = false;
      last_error_.clear();
      return false;
    case LeaseApi::Answer::failed:
      break;
  }
  last_error_ = a.error;
  return leading(clock_());
}

bool LeaseElector::tick() {
  LeaseApi::Answer current = api_.get();
  // Read after the answer: the change it shows may have been made just before it was sent.
  const Steady read_at = clock_();
  const std::string wall = wall_time_();
  if (current.kind == LeaseApi::Answer::failed) {
    last_error_ = current.error;
    return leading(read_at);
  }
  if (current.kind == LeaseApi::Answer::absent) {
    LeaseRecord mine{identity_, static_cast<int>(timing_.lease_duration.count() / 1000), wall, wall, 0, "", ""};
    return acquired(api_.create(mine), clock_(), false);
  }
  // A change of the record restarts the candidate's wait: the holder is alive.
  if (current.record.resource_version != observed_.resource_version || observed_at_ == Steady{}) {
    observed_ = current.record;
    observed_at_ = read_at;
  }
  const Steady now = clock_();
  const bool other_holds = !current.record.holder.empty() && current.record.holder != identity_;
  if (other_holds) {
    held_ = false;
    last_error_.clear();
    if (now - observed_at_ < timing_.lease_duration) return false;
  }
  LeaseRecord next = current.record;
  if (next.holder != identity_) {
    next.acquire_time = wall;
    ++next.transitions;
  }
  // Renewing continues the term only while the lead never lapsed and the record still names it.
  const bool continuing = leading(now) && current.record.holder == identity_;
  next.holder = identity_;
  next.duration_s = static_cast<int>(timing_.lease_duration.count() / 1000);
  next.renew_time = wall;
  return acquired(api_.update(next), now, continuing);
}

void LeaseElector::release() {
  if (!held_) return;
  held_ = false;
  LeaseRecord released = observed_;
  released.holder.clear();
  released.renew_time = wall_time_();
  (void)api_.update(released);  // refused if someone else wrote since: then it is theirs anyway
}

// ---------------------------------------------------------------------------------------------

KubeLeaseApi::KubeLeaseApi(KubeClient& client, std::string namespace_, std::string name)
    : client_(client), namespace_(std::move(namespace_)), name_(std::move(name)) {}

namespace {

std::string answer_error(const KubeResponse& r) {
  if (r.status == 0) return r.error;
  std::string m = kube_status_message(r.body);
  return "HTTP " + std::to_string(r.status) + (m.empty() ? "" : ": " + m);
}

// `absent_on_404`: a 404 says the Lease is gone (GET, PUT), not that its namespace is (POST).
LeaseApi::Answer answer(const KubeResponse& r, int success, bool absent_on_404) {
  LeaseApi::Answer a;
  if (r.status == success) {
    a.kind = LeaseApi::Answer::ok;
    a.record = parse_lease(r.body);
  } else if (r.status == 404 && absent_on_404) {
    a.kind = LeaseApi::Answer::absent;
  } else if (r.status == 409) {
    a.kind = LeaseApi::Answer::conflict;
  } else {
    a.error = answer_error(r);
  }
  return a;
}

}  // namespace

// The object as read with the election's fields set: a replace keeps the labels, annotations and
// spec fields that others put on the Lease.
std::string KubeLeaseApi::manifest(const LeaseRecord& r) const {
  Json lease = json_take(r.object.empty() ? nullptr : json_loadb(r.object.data(), r.object.size(), 0, nullptr));
  if (!json_is_object(lease.get())) lease = json_take(json_object());
  json_set(lease.get(), "apiVersion", json_str("coordination.k8s.io/v1"));
  json_set(lease.get(), "kind", json_str("Lease"));
  json_t* metadata = json_object_get(lease.get(), "metadata");
  if (!json_is_object(metadata)) {
    metadata = json_object();
    json_set(lease.get(), "metadata", metadata);
  }
  json_set(metadata, "name", json_str(name_));
  json_set(metadata, "namespace", json_str(namespace_));
  if (!r.resource_version.empty()) json_set(metadata, "resourceVersion", json_str(r.resource_version));
  json_t* spec = json_object_get(lease.get(), "spec");
  if (!json_is_object(spec)) {
    spec = json_object();
    json_set(lease.get(), "spec", spec);
  }
  json_set(spec, "holderIdentity", r.holder.empty() ? json_null() : json_str(r.holder));
  json_set(spec, "leaseDurationSeconds", json_integer(r.duration_s));
  if (!r.acquire_time.empty()) json_set(spec, "acquireTime", json_str(r.acquire_time));
  if (!r.renew_time.empty()) json_set(spec, "renewTime", json_str(r.renew_time));
  json_set(spec, "leaseTransitions", json_integer(r.transitions));
  return json_text(lease.get());
}

LeaseApi::Answer KubeLeaseApi::get() {
  return answer(client_.request("GET", "/apis/coordination.k8s.io/v1/namespaces/" + url_escape(namespace_) +
                                           "/leases/" + url_escape(name_)),
                200, true);
}

LeaseApi::Answer KubeLeaseApi::create(const LeaseRecord& r) {
  return answer(client_.request("POST", "/apis/coordination.k8s.io/v1/namespaces/" + url_escape(namespace_) + "/leases",
                                manifest(r)),
                201, false);
}

LeaseApi::Answer KubeLeaseApi::update(const LeaseRecord& r) {
  return answer(client_.request("PUT", "/apis/coordination.k8s.io/v1/namespaces/" + url_escape(namespace_) +
                                           "/leases/" + url_escape(name_),
                                manifest(r)),
                200, true);
}

LeaseRecord parse_lease(std::string_view body) {
  Json lease = json_take(json_loadb(body.data(), body.size(), 0, nullptr));
  LeaseRecord r;
  const json_t* metadata = json_object_get(lease.get(), "metadata");
  const json_t* spec = json_object_get(lease.get(), "spec");
  r.resource_version = json_string_or(metadata, "resourceVersion");
  r.holder = json_string_or(spec, "holderIdentity");
  r.duration_s = static_cast<int>(json_integer_value(json_object_get(spec, "leaseDurationSeconds")));
  r.acquire_time = json_string_or(spec, "acquireTime");
  r.renew_time = json_string_or(spec, "renewTime");
  r.transitions = static_cast<int>(json_integer_value(json_object_get(spec, "leaseTransitions")));
  r.object = std::string(body);
  return r;
}

std::string kube_micro_time_now() {
  struct timeval tv {};
  gettimeofday(&tv, nullptr);
  struct tm tm {};
  gmtime_r(&tv.tv_sec, &tm);
  char seconds[32];
  std::strftime(seconds, sizeof seconds, "%Y-%m-%dT%H:%M:%S", &tm);
  char micros[8];
  std::snprintf(micros, sizeof micros, "%06d", static_cast<int>(tv.tv_usec % 1000000));
  return std::string(seconds) + "." + micros + "Z";
}

}  // namespace safe::bridge
