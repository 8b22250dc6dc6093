#include "controller/safed/ettr_history.hpp"

#include <algorithm>
#include <map>
#include <utility>

#include "common/json_utf8.hpp"
#include "common/json_value.hpp"

namespace safe {

std::vector<EttrPeriod> ettr_by_period(const std::vector<EndedJobTime>& jobs, long long since, long long step) {
  std::map<std::pair<std::string, long long>, EttrPeriod> periods;
  for (const auto& j : jobs) {
    if (j.end_time < since) continue;
    long long start = since + (j.end_time - since) / step * step;
    EttrPeriod& p = periods[{j.workspace, start}];
    p.workspace = j.workspace;
    p.start = start;
    ++p.jobs;
    p.time.productive_s += static_cast<double>(std::max(0LL, j.run_seconds - j.lost_seconds));
    p.time.wall_s += static_cast<double>(std::max(0LL, j.end_time - j.first_start));
  }
  std::vector<EttrPeriod> out;
  out.reserve(periods.size());
  for (auto& [key, p] : periods) out.push_back(std::move(p));
  return out;
}

std::string render_ettr_history_json(StateStore& store, long long since, long long step) {
  Json root = json_take(json_object());
  json_set(root.get(), "since", json_integer(since));
  json_set(root.get(), "step", json_integer(step));
  json_t* items = json_array();
  for (const auto& p : ettr_by_period(store.ended_job_times(since), since, step)) {
    json_t* o = json_object();
    json_set(o, "workspace", json_utf8(p.workspace));
    json_set(o, "start", json_integer(p.start));
    json_set(o, "jobs", json_integer(p.jobs));
    json_set(o, "productive_s", json_real(p.time.productive_s));
    json_set(o, "wall_s", json_real(p.time.wall_s));
    json_set(o, "ettr", json_real(p.time.ettr()));
    json_array_append_new(items, o);
  }
  json_set(root.get(), "items", items);
  return json_document(root.get(), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

}  // namespace safe
