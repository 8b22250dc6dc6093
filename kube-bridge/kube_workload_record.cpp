#include "kube-bridge/kube_workload_record.hpp"

#include "common/json_value.hpp"

namespace safe::bridge {
namespace {

constexpr int kRecordVersion = 1;

json_t* strings(const std::vector<std::string>& v) {
  json_t* a = json_array();
  for (const auto& s : v) json_array_append_new(a, json_str(s));
  return a;
}

long long integer_or(const json_t* o, const char* key, long long fallback) {
  const json_t* v = json_object_get(o, key);
  return json_is_integer(v) ? json_integer_value(v) : fallback;
}

}  // namespace

std::string kube_workload_record(const KubeWorkload& w) {
  Json j = json_take(json_object());
  json_t* o = j.get();
  json_set(o, "version", json_integer(kRecordVersion));
  json_set(o, "spec", json_loads(workload_spec_json(w.spec).c_str(), 0, nullptr));
  json_t* s = json_object();
  json_set(s, "workspace", json_str(w.settings.workspace));
  json_set(s, "retries", json_integer(w.settings.retries));
  json_set(s, "health", json_str(to_string(w.settings.health)));
  json_set(s, "ckptDir", json_str(w.settings.ckpt_dir));
  json_set(s, "ckptSignal", json_integer(w.settings.ckpt_signal.signo));
  if (w.settings.ckpt_signal.seconds) json_set(s, "ckptSeconds", json_integer(*w.settings.ckpt_signal.seconds));
  json_set(s, "hangTimeout", json_integer(w.settings.hang_timeout));
  json_set(s, "gpus", json_integer(w.settings.gpus));
  json_set(o, "settings", s);
  json_set(o, "user", json_str(w.user));
  json_set(o, "uid", json_integer(w.uid));
  json_set(o, "gid", json_integer(w.gid));
  json_set(o, "attempt", json_integer(w.attempt));
  json_set(o, "avoidNodes", strings(w.avoid_nodes));
  json_set(o, "phase", json_str(to_string(w.phase)));
  json_set(o, "nodes", json_str(w.nodes));
  json_set(o, "submitTime", json_integer(w.submit_time));
  if (w.draining_attempt) {
    json_set(o, "drainingAttempt", json_integer(w.draining_attempt));
    json_set(o, "drainDeadline", json_integer(w.drain_deadline));
  }
  json_t* events = json_array();
  for (const auto& e : w.events) {
    json_t* ev = json_object();
    json_set(ev, "type", json_str(e.type));
    json_set(ev, "time", json_integer(e.time));
    json_set(ev, "attempt", json_integer(e.attempt));
    json_set(ev, "message", json_str(e.message));
    json_array_append_new(events, ev);
  }
  json_set(o, "events", events);
  return json_text(o);
}

Result<KubeWorkload> parse_kube_workload_record(std::string_view text) {
  Json j = json_take(json_loadb(text.data(), text.size(), 0, nullptr));
  const json_t* o = j.get();
  if (!json_is_object(o)) return Error{"not a JSON object"};
  if (integer_or(o, "version", 0) != kRecordVersion)
    return Error{"record version " + std::to_string(integer_or(o, "version", 0)) + ", this bridge reads version " +
                   std::to_string(kRecordVersion)};
  KubeWorkload w;
  SpecParse spec = parse_workload_spec(json_text(json_object_get(o, "spec")));
  if (!spec.spec) return Error{"spec: " + (spec.errors.empty() ? "missing" : spec.errors[0].path + " " + spec.errors[0].message)};
  w.spec = *spec.spec;
  const json_t* s = json_object_get(o, "settings");
  w.settings.workspace = json_string_or(s, "workspace");
  w.settings.retries = static_cast<int>(integer_or(s, "retries", 0));
  SafeOptions health;
  if (!parse_option(health, SafeOption::health, json_string_or(s, "health", "standard")))
    return Error{"settings.health: " + json_string_or(s, "health")};
  w.settings.health = health.health.value_or(HealthLevel::standard);
  w.settings.ckpt_dir = json_string_or(s, "ckptDir");
  w.settings.ckpt_signal.signo = static_cast<int>(integer_or(s, "ckptSignal", 0));
  if (json_object_get(s, "ckptSeconds")) w.settings.ckpt_signal.seconds = static_cast<int>(integer_or(s, "ckptSeconds", 0));
  w.settings.hang_timeout = static_cast<int>(integer_or(s, "hangTimeout", 0));
  w.settings.gpus = integer_or(s, "gpus", 0);
  w.user = json_string_or(o, "user");
  w.uid = static_cast<uid_t>(integer_or(o, "uid", 0));
  w.gid = static_cast<gid_t>(integer_or(o, "gid", 0));
  w.attempt = static_cast<int>(integer_or(o, "attempt", 1));
  for (std::size_t i = 0; i < json_array_size(json_object_get(o, "avoidNodes")); ++i) {
    const json_t* n = json_array_get(json_object_get(o, "avoidNodes"), i);
    if (json_is_string(n)) w.avoid_nodes.emplace_back(json_string_value(n));
  }
  auto phase = parse_workload_phase(json_string_or(o, "phase", "Pending"));
  if (!phase) return Error{"phase: " + json_string_or(o, "phase")};
  w.phase = *phase;
  w.nodes = json_string_or(o, "nodes");
  w.submit_time = static_cast<std::time_t>(integer_or(o, "submitTime", 0));
  w.draining_attempt = static_cast<int>(integer_or(o, "drainingAttempt", 0));
  w.drain_deadline = static_cast<std::time_t>(integer_or(o, "drainDeadline", 0));
  const json_t* events = json_object_get(o, "events");
  for (std::size_t i = 0; i < json_array_size(events); ++i) {
    const json_t* e = json_array_get(events, i);
    w.events.push_back({json_string_or(e, "type"), static_cast<std::time_t>(integer_or(e, "time", 0)),
                        static_cast<int>(integer_or(e, "attempt", 1)), json_string_or(e, "message")});
  }
  if (w.attempt < 1 || w.user.empty()) return Error{"attempt or user missing"};
  return w;
}

}  // namespace safe::bridge
