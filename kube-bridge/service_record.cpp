#include "kube-bridge/service_record.hpp"

#include <algorithm>

#include "common/json_value.hpp"

namespace safe::bridge {
namespace {

long long int_of(const json_t* o, const char* key) {
  const json_t* v = json_object_get(o, key);
  return json_is_integer(v) ? json_integer_value(v) : 0;
}

}  // namespace

void add_event(ServiceRecord& record, ServiceEvent event) {
  record.events.push_back(std::move(event));
  while (record.events.size() > kMaxServiceEvents) record.events.pop_front();
}

std::string service_record_json(const ServiceRecord& r) {
  Json j = json_take(json_object());
  json_t* o = j.get();
  json_set(o, "version", json_integer(1));
  Json spec = json_take(json_loads(workload_spec_json(r.spec).c_str(), 0, nullptr));
  json_set(o, "spec", json_incref(spec.get()));
  json_set(o, "user", json_str(r.user));
  json_set(o, "uid", json_integer(r.uid));
  json_set(o, "gid", json_integer(r.gid));
  json_set(o, "workDir", json_str(r.work_dir));
  json_set(o, "created", json_integer(r.created));
  json_set(o, "desired", json_integer(r.desired));
  json_set(o, "stopped", json_boolean(r.stopped));
  json_set(o, "deleted", json_boolean(r.deleted));
  json_set(o, "lastScaled", json_integer(r.last_scaled));
  json_set(o, "lowerDemandSince", json_integer(r.lower_demand_since));
  json_set(o, "lowerDemandPeak", json_integer(r.lower_demand_peak));
  json_t* replicas = json_array();
  for (const auto& x : r.replicas) {
    json_t* e = json_object();
    json_set(e, "index", json_integer(x.index));
    json_set(e, "jobId", json_integer(x.job_id));
    json_set(e, "port", json_integer(x.port));
    json_set(e, "replacementJob", json_integer(x.replacement_job));
    json_set(e, "replacementPort", json_integer(x.replacement_port));
    json_set(e, "replacementFailures", json_integer(x.replacement_failures));
    json_set(e, "spread", json_boolean(x.spread));
    json_set(e, "spreadGivenUp", json_boolean(x.spread_given_up));
    json_set(e, "failures", json_integer(x.failures));
    json_set(e, "notBefore", json_integer(x.not_before));
    json_set(e, "crashLooping", json_boolean(x.crash_looping));
    json_set(e, "restarts", json_integer(x.restarts));
    json_set(e, "readySince", json_integer(x.ready_since));
    json_set(e, "lastFailure", json_str(x.last_failure));
    json_t* avoid = json_array();
    for (const auto& n : x.avoid_nodes) json_array_append_new(avoid, json_str(n));
    json_set(e, "avoidNodes", avoid);
    json_set(e, "unhealthyJob", json_integer(x.unhealthy_job));
    json_set(e, "startFailures", json_integer(x.start_failures));
    json_set(e, "lastJob", json_integer(x.last_job));
    json_set(e, "startedAt", json_integer(x.started_at));
    json_array_append_new(replicas, e);
  }
  json_set(o, "replicas", replicas);
  json_t* cancelled = json_array();
  for (auto id : r.cancelled) json_array_append_new(cancelled, json_integer(id));
  json_set(o, "cancelled", cancelled);
  json_t* events = json_array();
  for (const auto& ev : r.events) {
    json_t* e = json_object();
    json_set(e, "time", json_integer(ev.time));
    json_set(e, "type", json_str(ev.type));
    json_set(e, "replica", json_integer(ev.replica));
    json_set(e, "message", json_str(ev.message));
    json_array_append_new(events, e);
  }
  json_set(o, "events", events);
  return json_text(o);
}

Result<ServiceRecord> parse_service_record(std::string_view text) {
  Json j = json_take(json_loadb(text.data(), text.size(), 0, nullptr));
  const json_t* o = j.get();
  if (!json_is_object(o) || int_of(o, "version") != 1) return Error{"not a service record of this bridge (version 1)"};
  std::string spec_json = json_dump(json_object_get(o, "spec"), JSON_COMPACT);
  if (spec_json.empty()) return Error{"the record has no spec"};
  SpecParse parsed = parse_workload_spec(spec_json);
  if (!parsed.spec) return Error{"the record's spec does not parse: " + (parsed.errors.empty() ? std::string("?") : parsed.errors[0].path + " " + parsed.errors[0].message)};
  ServiceRecord r;
  r.spec = *parsed.spec;
  r.user = json_string_or(o, "user");
  r.uid = static_cast<uid_t>(int_of(o, "uid"));
  r.gid = static_cast<gid_t>(int_of(o, "gid"));
  r.work_dir = json_string_or(o, "workDir");
  r.created = int_of(o, "created");
  r.desired = static_cast<int>(int_of(o, "desired"));
  r.stopped = json_is_true(json_object_get(o, "stopped"));
  r.deleted = json_is_true(json_object_get(o, "deleted"));
  r.last_scaled = int_of(o, "lastScaled");
  r.lower_demand_since = int_of(o, "lowerDemandSince");
  r.lower_demand_peak = static_cast<int>(int_of(o, "lowerDemandPeak"));
  // A record edited by hand (or damaged) cannot ask for more than the spec allows.
  r.desired = std::clamp(r.desired, r.spec.service.min_replicas, r.spec.service.max_replicas);
  std::size_t i;
  json_t* e;
  json_array_foreach(json_object_get(o, "replicas"), i, e) {
    ReplicaState x;
    x.index = static_cast<int>(int_of(e, "index"));
    x.job_id = static_cast<std::uint32_t>(int_of(e, "jobId"));
    x.port = static_cast<int>(int_of(e, "port"));
    x.replacement_job = static_cast<std::uint32_t>(int_of(e, "replacementJob"));
    x.replacement_port = static_cast<int>(int_of(e, "replacementPort"));
    x.replacement_failures = static_cast<int>(int_of(e, "replacementFailures"));
    x.spread = json_is_true(json_object_get(e, "spread"));
    x.spread_given_up = json_is_true(json_object_get(e, "spreadGivenUp"));
    x.failures = static_cast<int>(int_of(e, "failures"));
    x.not_before = int_of(e, "notBefore");
    x.crash_looping = json_is_true(json_object_get(e, "crashLooping"));
    x.restarts = static_cast<int>(int_of(e, "restarts"));
    x.ready_since = int_of(e, "readySince");
    x.last_failure = json_string_or(e, "lastFailure");
    x.unhealthy_job = static_cast<std::uint32_t>(int_of(e, "unhealthyJob"));
    x.start_failures = static_cast<int>(int_of(e, "startFailures"));
    x.last_job = static_cast<std::uint32_t>(int_of(e, "lastJob"));
    x.started_at = int_of(e, "startedAt");
    std::size_t k;
    json_t* n;
    json_array_foreach(json_object_get(e, "avoidNodes"), k, n) if (json_is_string(n)) x.avoid_nodes.push_back(json_string_value(n));
    r.replicas.push_back(std::move(x));
  }
  json_array_foreach(json_object_get(o, "cancelled"), i, e) if (json_is_integer(e)) r.cancelled.insert(static_cast<std::uint32_t>(json_integer_value(e)));
  json_array_foreach(json_object_get(o, "events"), i, e) {
    r.events.push_back({int_of(e, "time"), json_string_or(e, "type"), static_cast<int>(int_of(e, "replica")), json_string_or(e, "message")});
  }
  return r;
}

std::string service_workload_id(const std::string& name) { return "svc-" + name; }

std::optional<std::string> parse_service_workload_id(std::string_view id) {
  if (!id.starts_with("svc-") || id.size() == 4 || id.size() > 4 + 52) return std::nullopt;
  for (char c : id.substr(4))
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return std::nullopt;
  return std::string(id.substr(4));
}

}  // namespace safe::bridge
