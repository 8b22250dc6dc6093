// GPU counting from every way a Slurm job can ask for GPUs.
#include <gtest/gtest.h>

#include "common/gpu_request.hpp"

namespace safe {
namespace {

struct TresCase {
  const char* tres;
  long long gpus;  // -1: malformed
};

class TresTest : public ::testing::TestWithParam<TresCase> {};

TEST_P(TresTest, CountsGpus) {
  auto n = gpus_in_tres(GetParam().tres);
  if (GetParam().gpus < 0) {
    EXPECT_FALSE(n.has_value()) << GetParam().tres;
  } else {
    ASSERT_TRUE(n.has_value()) << GetParam().tres;
    EXPECT_EQ(*n, GetParam().gpus) << GetParam().tres;
  }
}

const TresCase kTresCases[] = {
    {"", 0},
    {"gres:gpu:8", 8},
    {"gres/gpu:8", 8},
    {"gpu:4", 4},
    {"gres:gpu", 1},
    {"gres:gpu:mi300x:8", 8},
    {"gres:gpu:a100", 1},
    {"gres:gpu:2,gres:nic:1", 2},
    {"gres:nic:1", 0},
    {"gres:gpu:1,gres:gpu:v100:2", 3},
    {"gres/gpu=4", 4},
    {"cpu=4,gres/gpu=2", 2},
    {"gres:gpu:1k", 1024},
    {"gres:gpu:x:y", -1},
    {"gres:gpu:-1", -1},
    {"gres:gpu:", -1},
    {"gres:gpu:a:b:3", -1},
    {"gres:gpu:99999999999", -1},
    {"gres:gpus:2", 0},  // another resource named gpus, not gpu
};

INSTANTIATE_TEST_SUITE_P(Tres, TresTest, ::testing::ValuesIn(kTresCases));

struct RequestCase {
  const char* name;
  GpuRequest request;
  long long gpus;
  std::optional<uint32_t> max_nodes = std::nullopt;  // the bound the charge puts on the job
};

// Nodes of 8 GPUs on 2 sockets, a partition of 4 of them.
NodeCapacity capacity() {
  NodeCapacity c;
  c.known = true;
  c.gpus_per_node = 8;
  c.sockets_per_node = 2;
  c.nodes = 4;
  return c;
}

class RequestTest : public ::testing::TestWithParam<RequestCase> {};

TEST_P(RequestTest, ChargesWhatSlurmCanAllocate) {
  GpuCharge c = charge_gpus(GetParam().request, capacity());
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_EQ(c.gpus, GetParam().gpus) << c.how;
  EXPECT_EQ(c.max_nodes, GetParam().max_nodes);
}

GpuRequest req(std::string job, std::string node, std::string task, std::string socket, uint32_t min_nodes,
               uint32_t max_nodes, uint32_t tasks, uint32_t tasks_per_node = 0, uint32_t sockets = 0) {
  GpuRequest r;
  r.tres_per_job = job;
  r.tres_per_node = node;
  r.tres_per_task = task;
  r.tres_per_socket = socket;
  r.min_nodes = min_nodes;
  r.max_nodes = max_nodes;
  r.num_tasks = tasks;
  r.ntasks_per_node = tasks_per_node;
  r.sockets_per_node = sockets;
  return r;
}
GpuRequest exclusive(GpuRequest r) {
  r.exclusive = true;
  return r;
}
GpuRequest core_spec(GpuRequest r) {
  r.core_spec = true;
  return r;
}
GpuRequest per_gpu_tasks(GpuRequest r, uint32_t n) {
  r.ntasks_per_tres = n;
  return r;
}

const RequestCase kRequestCases[] = {
    {"no_gpus", req("", "", "", "", 4, 4, 0), 0},
    {"gpus_per_job", req("gres:gpu:16", "", "", "", 2, 0, 0), 16},
    {"gpus_per_node_times_nodes", req("", "gres:gpu:8", "", "", 4, 4, 0), 32},
    {"gres_typed_times_nodes", req("", "gres:gpu:mi300x:8", "", "", 2, 2, 0), 16},
    {"gres_without_a_count_is_one_per_node", req("", "gres:gpu", "", "", 2, 2, 0), 2},
    {"per_node_one_node_bounded", req("", "gres:gpu:8", "", "", 0, 0, 0), 8, 1u},
    {"node_range_charged_at_its_maximum", req("", "gres:gpu:8", "", "", 1, 2, 0), 16},
    {"node_range_capped_by_the_partition", req("", "gres:gpu:8", "", "", 1, 100, 0), 32, 4u},
    {"tasks_capped_by_the_partition", req("", "gres:gpu:1", "", "", 1, 0, 100), 4, 4u},
    {"gpus_per_job_alone_needs_no_bound", req("gres:gpu:16", "", "", "", 1, 100, 0), 16},
    {"unbounded_nodes_bounded_by_tasks", req("", "gres:gpu:1", "", "", 1, 0, 3), 3},
    {"unbounded_nodes_bounded_to_the_minimum", req("", "gres:gpu:2", "", "", 3, 0, 0), 6, 3u},
    {"gpus_per_task_times_tasks", req("", "", "gres:gpu:1", "", 2, 2, 6), 6},
    {"gpus_per_task_ntasks_per_node_range", req("", "", "gres:gpu:2", "", 1, 2, 0, 4), 16},
    {"gpus_per_task_capped_by_the_nodes", req("", "", "gres:gpu:4", "", 1, 1, 6), 8},
    {"gpus_per_task_no_tasks", req("", "", "gres:gpu:1", "", 3, 3, 0), 3},
    {"gpus_per_socket_every_socket", req("", "", "", "gres:gpu:2", 2, 2, 0, 0, 1), 8},
    {"largest_form_is_charged", req("gres:gpu:4", "gres:gpu:8", "", "", 2, 2, 0), 16},
    {"exclusive_without_gpus_gets_the_whole_node", exclusive(req("", "", "", "", 1, 1, 0)), 8},
    {"exclusive_with_one_gpu_gets_the_whole_node", exclusive(req("", "gres:gpu:1", "", "", 2, 2, 0)), 16},
    {"exclusive_unbounded_is_bounded", exclusive(req("", "", "", "", 2, 0, 0)), 16, 2u},
    {"core_spec_gets_whole_nodes", core_spec(req("", "", "", "", 1, 1, 0)), 8},
    {"ntasks_per_gpu", per_gpu_tasks(req("", "", "", "", 1, 1, 10), 4), 3},
};

INSTANTIATE_TEST_SUITE_P(Requests, RequestTest, ::testing::ValuesIn(kRequestCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuRequest, AnExclusivePartitionGivesWholeNodes) {
  NodeCapacity c = capacity();
  c.whole_node = true;
  EXPECT_EQ(16, charge_gpus(req("", "gres:gpu:1", "", "", 2, 2, 0), c).gpus);
}

TEST(GpuRequest, WholeNodesWithoutTheShapeCannotBeCharged) {
  GpuCharge c = charge_gpus(exclusive(req("", "", "", "", 1, 1, 0)), NodeCapacity{});
  EXPECT_TRUE(c.needs_capacity);
  EXPECT_FALSE(charge_gpus(req("", "gres:gpu:2", "", "", 1, 1, 0), NodeCapacity{}).needs_capacity);
}

TEST(GpuRequest, MalformedRequestSaysWhich) {
  GpuRequest r;
  r.tres_per_node = "gres:gpu:x:y";
  GpuCharge c = charge_gpus(r, capacity());
  EXPECT_EQ(c.error, "safe: cannot read the GPU request 'gres:gpu:x:y' (--gpus-per-node/--gres)");
}

}  // namespace
}  // namespace safe
