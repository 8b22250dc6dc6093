#include "kube-bridge/controller_history.hpp"

#include <ctime>

namespace safe::bridge {
namespace {

std::string text(const json_t* o, const char* k) {
  const json_t* v = json_object_get(o, k);
  return json_is_string(v) ? json_string_value(v) : "";
}

json_t* when(const json_t* o, const char* k) {
  json_int_t t = json_integer_value(json_object_get(o, k));
  if (t <= 0) return json_null();
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return json_string(buf);
}

// One event from safed's record `r` (an attempt or a failover): its attempt number, `time` from
// the record's `time_key`.
void append_event(json_t* events, const char* type, const json_t* r, const char* time_key, const std::string& msg) {
  json_t* e = json_object();
  json_set(e, "type", json_string(type));
  json_set(e, "time", when(r, time_key));
  json_set(e, "attempt", json_integer(json_integer_value(json_object_get(r, "attempt"))));
  json_set(e, "message", json_str(msg));
  json_set(e, "source", json_string("safed"));
  json_array_append_new(events, e);
}

}  // namespace

bool append_controller_events(const std::string& document, json_t* events) {
  Json doc = json_take(json_loadb(document.data(), document.size(), 0, nullptr));
  json_t* attempts = json_object_get(doc.get(), "attempts");
  json_t* failovers = json_object_get(doc.get(), "failovers");
  if (!json_is_array(attempts) || !json_is_array(failovers)) return false;
  for (std::size_t i = 0; i < json_array_size(attempts); ++i) {
    json_t* a = json_array_get(attempts, i);
    std::string msg = text(a, "end_state").empty() ? "running on " + text(a, "nodes")
                                                   : text(a, "end_state") + " on " + text(a, "nodes");
    if (!text(a, "class").empty()) msg += "; classified " + text(a, "class") + " (" + text(a, "rule") + "): " + text(a, "evidence");
    append_event(events, "Attempt", a, "end_time", msg);
  }
  for (std::size_t i = 0; i < json_array_size(failovers); ++i) {
    json_t* f = json_array_get(failovers, i);
    std::string msg = text(f, "class") + " on " + text(f, "bad_nodes") + ": " + text(f, "phase");
    if (json_is_integer(json_object_get(f, "mttr_s")))
      msg += ", running again after " + std::to_string(json_integer_value(json_object_get(f, "mttr_s"))) + " s";
    if (!text(f, "evidence").empty()) msg += " (" + text(f, "evidence") + ")";
    append_event(events, "Failover", f, "fault_time", msg);
  }
  return true;
}

}  // namespace safe::bridge
