// safed's failover and node-fault history documents (GET /api/v1/failovers, /api/v1/node-faults)
// from a real state store: what each holds, in which order, and whose failovers a user sees.
#include <gtest/gtest.h>
#include <jansson.h>

#include "controller/safed/history_report.hpp"

namespace safe {
namespace {

json_t* items_of(const std::string& body) {
  json_t* doc = json_loads(body.c_str(), 0, nullptr);
  EXPECT_NE(nullptr, doc) << body;
  return doc;
}

class HistoryReportTest : public ::testing::Test {
 protected:
  HistoryReportTest() {
    for (auto [id, uid] : {std::pair{7u, 1001u}, std::pair{8u, 1002u}}) {
      JobRecord j;
      j.job_id = id;
      j.submitted = 100;
      j.user_id = uid;
      store.put_job(j);
    }
    FailoverRecord done;
    done.job_id = 7;
    done.submitted = 100;
    done.attempt = 0;
    done.failure_class = "node_fault";
    done.evidence = "n1 SaFE: gpu0 uncorrectable ECC=2";
    done.bad_nodes = "n1";
    done.phase = FailoverPhase::done;
    done.fault_time = 2000;
    done.running_again_time = 2004;
    done.workspace = "ml";
    store.put_failover(done);
    FailoverRecord waiting = done;
    waiting.job_id = 8;
    waiting.phase = FailoverPhase::waiting;
    waiting.fault_time = 1000;
    waiting.running_again_time = 0;
    store.put_failover(waiting);
  }
  StateStore store{":memory:"};
};

TEST_F(HistoryReportTest, FailoversComeOldestFirstWithTheirMttrOnceRunningAgain) {
  json_t* doc = items_of(render_failovers_json(store, 0, std::nullopt));
  json_t* items = json_object_get(doc, "items");
  ASSERT_EQ(2u, json_array_size(items));
  json_t* first = json_array_get(items, 0);
  json_t* second = json_array_get(items, 1);
  EXPECT_EQ(8, json_integer_value(json_object_get(first, "job_id")));
  EXPECT_TRUE(json_is_null(json_object_get(first, "mttr_s"))) << "not running again yet";
  EXPECT_EQ(7, json_integer_value(json_object_get(second, "job_id")));
  EXPECT_EQ(1, json_integer_value(json_object_get(second, "attempt"))) << "1-based, as safectl shows it";
  EXPECT_EQ(4, json_integer_value(json_object_get(second, "mttr_s")));
  EXPECT_EQ(1001, json_integer_value(json_object_get(second, "user_id")));
  EXPECT_STREQ("done", json_string_value(json_object_get(second, "phase")));
  EXPECT_STREQ("node_fault", json_string_value(json_object_get(second, "class")));
  json_decref(doc);
}

TEST_F(HistoryReportTest, AUserSeesOnlyTheirOwnJobsFailoversAndSinceCuts) {
  json_t* alice = items_of(render_failovers_json(store, 0, 1001u));
  ASSERT_EQ(1u, json_array_size(json_object_get(alice, "items")));
  EXPECT_EQ(7, json_integer_value(json_object_get(json_array_get(json_object_get(alice, "items"), 0), "job_id")));
  json_decref(alice);
  json_t* recent = items_of(render_failovers_json(store, 1500, std::nullopt));
  EXPECT_EQ(1u, json_array_size(json_object_get(recent, "items")));
  json_decref(recent);
}

TEST_F(HistoryReportTest, NodeFaultsOfANodeOrTheNewestOfTheCluster) {
  store.add_node_fault({"n1", 10, "safe_drain", "SaFE: gpu0 uncorrectable ECC=2"});
  store.add_node_fault({"n2", 20, "down", "Not responding"});
  store.add_node_fault({"n1", 30, "prolog", "xgmi gpu1 links down"});
  json_t* n1 = items_of(render_node_faults_json(store, "n1", 0, 1000));
  json_t* items = json_object_get(n1, "items");
  ASSERT_EQ(2u, json_array_size(items));
  EXPECT_EQ(10, json_integer_value(json_object_get(json_array_get(items, 0), "time")));
  EXPECT_STREQ("xgmi gpu1 links down", json_string_value(json_object_get(json_array_get(items, 1), "detail")));
  json_decref(n1);
  json_t* newest = items_of(render_node_faults_json(store, "", 15, 2));
  items = json_object_get(newest, "items");
  ASSERT_EQ(2u, json_array_size(items)) << "the newest two, from time 15 on";
  EXPECT_STREQ("n2", json_string_value(json_object_get(json_array_get(items, 0), "node"))) << "oldest first";
  EXPECT_STREQ("n1", json_string_value(json_object_get(json_array_get(items, 1), "node")));
  json_decref(newest);
}

}  // namespace
}  // namespace safe
