// ETTR per workspace over time (GET /api/v1/ettr-history) from a real state store: which jobs
// count (ended, had run), in which period, and the ETTR of each period.
#include "controller/safed/ettr_history.hpp"

#include <gtest/gtest.h>
#include <jansson.h>

namespace safe {
namespace {

class EttrHistoryTest : public ::testing::Test {
 protected:
  // A job of `workspace` that first ran at `start`, ended at `end`, ran `run` s of which `lost` s
  // were lost; `start` 0: it never ran (no attempt with a start).
  void job(std::uint32_t id, const std::string& workspace, long long start, long long end, long long run, long long lost) {
    JobRecord j;
    j.job_id = id;
    j.submitted = 50;
    j.workspace = workspace;
    j.end_time = end;
    j.run_seconds = run;
    j.lost_seconds = lost;
    store.put_job(j);
    AttemptRecord a;
    a.job_id = id;
    a.submitted = 50;
    a.attempt = 0;
    a.start_time = start;
    store.put_attempt(a);
    if (start > 0) {  // a second run starts later: the job's first start is the earliest
      a.attempt = 1;
      a.start_time = start + 10;
      store.put_attempt(a);
    }
  }
  StateStore store{":memory:"};
};

TEST_F(EttrHistoryTest, EndedJobsThatRanWithTheirFirstStart) {
  job(1, "ml", 1000, 2000, 900, 100);
  job(2, "ml", 0, 2500, 0, 0);         // ended without running: not counted
  job(3, "research", 1500, 0, 0, 0);   // still running: not counted
  job(4, "research", 100, 500, 400, 0);  // ended before since
  auto jobs = store.ended_job_times(600);
  ASSERT_EQ(1u, jobs.size());
  EXPECT_EQ("ml", jobs[0].workspace);
  EXPECT_EQ(1000, jobs[0].first_start);
  EXPECT_EQ(2000, jobs[0].end_time);
  EXPECT_EQ(900, jobs[0].run_seconds);
  EXPECT_EQ(100, jobs[0].lost_seconds);
}

TEST_F(EttrHistoryTest, PeriodsByWorkspaceWeighLongJobsMore) {
  std::vector<EndedJobTime> jobs = {
      {"ml", 0, 1000, 1000, 0},       // period 0: 1000 wall, 1000 productive
      {"ml", 500, 1500, 900, 400},    // period 0 too: 1000 wall, 500 productive
      {"ml", 86000, 90000, 3000, 0},  // period 1 (86400..): 4000 wall, 3000 productive
      {"", 10, 20, 10, 0},            // no workspace
      {"ml", 0, -5, 0, 0},            // before since: left out
  };
  auto periods = ettr_by_period(jobs, 0, 86400);
  ASSERT_EQ(3u, periods.size());
  EXPECT_EQ("", periods[0].workspace);
  EXPECT_DOUBLE_EQ(1.0, periods[0].time.ettr());
  EXPECT_EQ("ml", periods[1].workspace);
  EXPECT_EQ(0, periods[1].start);
  EXPECT_EQ(2, periods[1].jobs);
  EXPECT_DOUBLE_EQ(1500.0 / 2000.0, periods[1].time.ettr());
  EXPECT_EQ(86400, periods[2].start);
  EXPECT_DOUBLE_EQ(0.75, periods[2].time.ettr());
  // Periods start at since + k * step; the job that ended at 20 is before since.
  auto shifted = ettr_by_period(jobs, 300, 3600);
  ASSERT_EQ(2u, shifted.size());
  EXPECT_EQ(300, shifted[0].start);
  EXPECT_EQ(2, shifted[0].jobs);
  EXPECT_EQ(300 + 24 * 3600, shifted[1].start);
}

TEST_F(EttrHistoryTest, DocumentHasEachPeriodsFigures) {
  job(1, "ml", 1000, 2000, 900, 300);
  json_t* doc = json_loads(render_ettr_history_json(store, 0, 3600).c_str(), 0, nullptr);
  ASSERT_NE(nullptr, doc);
  EXPECT_EQ(3600, json_integer_value(json_object_get(doc, "step")));
  json_t* items = json_object_get(doc, "items");
  ASSERT_EQ(1u, json_array_size(items));
  json_t* p = json_array_get(items, 0);
  EXPECT_STREQ("ml", json_string_value(json_object_get(p, "workspace")));
  EXPECT_EQ(0, json_integer_value(json_object_get(p, "start")));
  EXPECT_EQ(1, json_integer_value(json_object_get(p, "jobs")));
  EXPECT_DOUBLE_EQ(0.6, json_real_value(json_object_get(p, "ettr")));
  EXPECT_DOUBLE_EQ(1000, json_real_value(json_object_get(p, "wall_s")));
  json_decref(doc);
}

}  // namespace
}  // namespace safe
