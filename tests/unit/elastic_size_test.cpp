// Shrink and grow back's pure rules (controller/safed/elastic_size.hpp).
#include "controller/safed/elastic_size.hpp"

#include <gtest/gtest.h>

namespace safe {
namespace {

TEST(ElasticSize, ARestartShrinksOnlyOnceItMayAndNeverUnderTheMinimum) {
  ElasticSize e{8, 2, 2};  // -N 8 --safe-min-nodes=2 --safe-node-multiple=2
  EXPECT_EQ(elastic_node_count(e, 8, true, 8), 8);    // it fits: full size
  EXPECT_EQ(elastic_node_count(e, 12, true, 8), 8);
  EXPECT_EQ(elastic_node_count(e, 5, false, 8), 8);   // before failover.shrink_after_s: waits at full size
  EXPECT_EQ(elastic_node_count(e, 5, true, 8), 4);    // the most free, a multiple of 2
  EXPECT_EQ(elastic_node_count(e, 2, true, 8), 2);
  EXPECT_EQ(elastic_node_count(e, 1, true, 8), 8);    // fewer than the minimum: waits, as without the option
  EXPECT_EQ(elastic_node_count(ElasticSize{8, 3, 1}, 7, true, 8), 7);
  EXPECT_EQ(elastic_node_count(ElasticSize{4, 0, 1}, 1, true, 4), 4);  // not elastic
  // A job that ran shrunk need not wait to run at that size again (nor more, when it can).
  EXPECT_EQ(elastic_node_count(e, 4, false, 4), 4);
  EXPECT_EQ(elastic_node_count(e, 7, false, 4), 6);
  EXPECT_EQ(elastic_node_count(e, 3, false, 4), 8);
  EXPECT_EQ(elastic_node_count(e, 3, true, 4), 2);
}

TEST(ElasticSize, GrowsBackWhenTheFreeNodesMakeUpTheFullSize) {
  ElasticSize e{4, 2, 1};
  EXPECT_FALSE(grow_back_due(e, 4, 10));  // at full size
  EXPECT_FALSE(grow_back_due(e, 2, 1));
  EXPECT_TRUE(grow_back_due(e, 2, 2));
  EXPECT_TRUE(grow_back_due(e, 3, 1));
  EXPECT_FALSE(grow_back_due(ElasticSize{}, 1, 10));
}

TEST(ElasticSize, FreeNodesAreInServiceUnreservedIdleAndOfTheJobsKind) {
  std::vector<SlurmNode> nodes(7);
  for (int i = 0; i < 7; ++i) {
    nodes[i].name = "n" + std::to_string(i + 1);
    nodes[i].gres = "gpu:h100:8";
    nodes[i].cpus = 64;
  }
  nodes[1].busy = true;      // n2: another job's
  nodes[2].drain = true;     // n3
  nodes[3].down = true;      // n4
  nodes[4].reserved = true;  // n5: a reservation's (the spares)
  // n1, n6, n7 free; n7 not in the partition; n6 excluded
  EXPECT_EQ(free_nodes_for(nodes, {}, {}, {}), 3);
  EXPECT_EQ(free_nodes_for(nodes, {"n1", "n2", "n3", "n4", "n5", "n6"}, {}, {}), 2);
  EXPECT_EQ(free_nodes_for(nodes, {"n1", "n2", "n3", "n4", "n5", "n6"}, {"n6"}, {}), 1);
  nodes[5].gres = "gpu:a100:8";  // n6: another kind of node
  EXPECT_EQ(free_nodes_for(nodes, {}, {}, {{"gpu:h100:8", 64}}), 2);
  EXPECT_EQ(free_nodes_for(nodes, {}, {}, {{"gpu:h100:8", 32}}), 0);
}

}  // namespace
}  // namespace safe
