#include "common/health_history.hpp"

#include <jansson.h>

#include <algorithm>
#include <memory>

#include "common/json_utf8.hpp"
#include "common/json_value.hpp"

namespace safe {

RunVerdict apply_run(HealthHistory& history, const std::vector<CheckResult>& results, const HysteresisPolicy& policy) {
  RunVerdict verdict;
  for (const CheckResult& r : results) {
    CheckHistory& h = history.checks[r.check];
    CheckResult effective = r;
    if (r.status == CheckStatus::unknown) {
      ++h.unknowns;
      if (h.unknowns >= policy.unknown_runs) {
        effective.status = CheckStatus::fail;
        effective.detail = r.check + " unknown " + std::to_string(h.unknowns) + " runs" +
                           (r.detail.empty() ? "" : ": " + r.detail);
      }
    } else {
      h.unknowns = 0;
    }

    if (effective.status == CheckStatus::fail) {
      ++h.fails;
      h.passes = 0;
      if (r.severity == Severity::critical) h.recovering = true;
    } else if (effective.status == CheckStatus::pass) {
      h.fails = 0;
      ++h.passes;
      if (h.passes >= policy.pass_runs) h.recovering = false;
    }
    // A plain unknown neither extends nor breaks a streak.
    h.detail = effective.detail;

    if (effective.status == CheckStatus::fail) {
      if (r.severity == Severity::warning) {
        verdict.warnings.push_back(effective);
      } else {
        int needed = r.urgent ? policy.urgent_fail_runs : policy.fail_runs;
        if (h.fails >= needed && !verdict.drain_cause) verdict.drain_cause = effective;
        else if (h.fails < needed) verdict.pending.push_back(effective);
      }
    }
    verdict.effective.push_back(std::move(effective));
  }
  bool any_critical_failing = verdict.drain_cause.has_value() || !verdict.pending.empty();
  bool any_recovering = false;
  for (const auto& [name, h] : history.checks) any_recovering = any_recovering || h.recovering;
  bool any_critical_failure_now = any_critical_failing;
  for (const auto& e : verdict.effective)
    any_critical_failure_now = any_critical_failure_now || (e.status == CheckStatus::fail && e.severity == Severity::critical);
  history.clean_runs = any_critical_failure_now ? 0 : history.clean_runs + 1;
  verdict.clean_runs = history.clean_runs;
  verdict.all_recovered = !any_critical_failing && !any_recovering && history.clean_runs >= policy.pass_runs;
  return verdict;
}

std::string to_json(const HealthHistory& history) {
  Json root(json_object());
  json_object_set_new(root.get(), "slurmd_instance", json_utf8(history.slurmd_instance));
  json_object_set_new(root.get(), "last_run", json_integer(history.last_run));
  json_object_set_new(root.get(), "clean_runs", json_integer(history.clean_runs));
  json_t* checks = json_object();
  for (const auto& [name, h] : history.checks) {
    json_t* o = json_object();
    json_object_set_new(o, "fails", json_integer(h.fails));
    json_object_set_new(o, "passes", json_integer(h.passes));
    json_object_set_new(o, "unknowns", json_integer(h.unknowns));
    json_object_set_new(o, "recovering", json_boolean(h.recovering));
    json_object_set_new(o, "detail", json_utf8(h.detail));
    json_object_set_new(checks, name.c_str(), o);
  }
  json_object_set_new(root.get(), "checks", checks);
  return json_document(root.get(), JSON_INDENT(1) | JSON_SORT_KEYS);
}

HealthHistory health_history_from_json(std::string_view text) {
  HealthHistory history;
  json_error_t err;
  Json root(json_loadb(text.data(), text.size(), 0, &err));
  if (!root || !json_is_object(root.get())) return history;
  if (json_t* v = json_object_get(root.get(), "slurmd_instance"); json_is_string(v))
    history.slurmd_instance = json_string_value(v);
  if (json_t* v = json_object_get(root.get(), "last_run"); json_is_integer(v)) history.last_run = json_integer_value(v);
  if (json_t* v = json_object_get(root.get(), "clean_runs"); json_is_integer(v))
    history.clean_runs = static_cast<int>(std::max<json_int_t>(0, json_integer_value(v)));
  const char* name;
  json_t* o;
  json_object_foreach(json_object_get(root.get(), "checks"), name, o) {
    CheckHistory h;
    auto num = [&](const char* k) {
      json_t* v = json_object_get(o, k);
      return json_is_integer(v) ? static_cast<int>(std::max<json_int_t>(0, json_integer_value(v))) : 0;
    };
    h.fails = num("fails");
    h.passes = num("passes");
    h.unknowns = num("unknowns");
    h.recovering = json_is_true(json_object_get(o, "recovering"));
    if (json_t* d = json_object_get(o, "detail"); json_is_string(d)) h.detail = json_string_value(d);
    history.checks[name] = h;
  }
  return history;
}

}  // namespace safe
