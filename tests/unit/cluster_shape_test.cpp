#include "common/cluster_shape.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace safe {
namespace {

TEST(GpusInNodeGres, CountsGpuEntriesOnly) {
  EXPECT_EQ(8, gpus_in_node_gres("gpu:8(S:0-1),nic:1"));
  EXPECT_EQ(12, gpus_in_node_gres("gpu:mi300x:8,gpu:a100:4"));
  EXPECT_EQ(1, gpus_in_node_gres("gpu"));
  EXPECT_EQ(0, gpus_in_node_gres("gpux:4,nic:2"));
}

// Found by the fuzz target (CI, 2026-12-03): "gpu:mi300x:-8" made the count negative.
TEST(GpusInNodeGres, ANegativeOrHugeCountNeverMakesTheSumNegative) {
  EXPECT_EQ(8, gpus_in_node_gres("gpu:mi300x:-8,gpu:8"));
  EXPECT_EQ(std::numeric_limits<int>::max(), gpus_in_node_gres("gpu:2147483647,gpu:2147483647"));
}

}  // namespace
}  // namespace safe
