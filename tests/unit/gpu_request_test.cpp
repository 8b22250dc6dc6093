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
};

class RequestTest : public ::testing::TestWithParam<RequestCase> {};

TEST_P(RequestTest, TotalsGpus) {
  GpuCount c = count_requested_gpus(GetParam().request);
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_EQ(c.gpus, GetParam().gpus);
}

RequestCase request_case(const char* name, long long gpus, std::string job, std::string node, std::string task,
                         std::string socket, uint32_t nodes, uint32_t tasks, uint32_t tasks_per_node = 0,
                         uint32_t sockets = 0) {
  return {name, GpuRequest{job, node, task, socket, nodes, tasks, tasks_per_node, sockets}, gpus};
}

const RequestCase kRequestCases[] = {
    request_case("no_gpus", 0, "", "", "", "", 4, 0),
    request_case("gpus_per_job", 16, "gres:gpu:16", "", "", "", 2, 0),
    request_case("gpus_per_node_times_nodes", 32, "", "gres:gpu:8", "", "", 4, 0),
    request_case("gres_typed_times_nodes", 16, "", "gres:gpu:mi300x:8", "", "", 2, 0),
    request_case("per_node_default_one_node", 8, "", "gres:gpu:8", "", "", 0, 0),
    request_case("gpus_per_task_times_tasks", 6, "", "", "gres:gpu:1", "", 2, 6),
    request_case("gpus_per_task_ntasks_per_node", 16, "", "", "gres:gpu:2", "", 2, 0, 4),
    request_case("gpus_per_task_no_tasks", 3, "", "", "gres:gpu:1", "", 3, 0),
    request_case("gpus_per_socket", 8, "", "", "", "gres:gpu:2", 2, 0, 0, 2),
    request_case("largest_form_is_charged", 16, "gres:gpu:4", "gres:gpu:8", "", "", 2, 0),
};

INSTANTIATE_TEST_SUITE_P(Requests, RequestTest, ::testing::ValuesIn(kRequestCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(GpuRequest, MalformedRequestSaysWhich) {
  GpuRequest r;
  r.tres_per_node = "gres:gpu:x:y";
  GpuCount c = count_requested_gpus(r);
  EXPECT_EQ(c.error, "safe: cannot read the GPU request 'gres:gpu:x:y' (--gpus-per-node/--gres)");
}

}  // namespace
}  // namespace safe
