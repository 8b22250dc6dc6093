// The sim backend's file format and fault injection.
#include <gtest/gtest.h>

#include "common/sim_gpu_file.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

TEST(SimFaults, EachFaultChangesWhatItsCheckReads) {
  GpuSnapshot s = healthy_sim_snapshot(8);
  ASSERT_TRUE(apply_sim_fault(s, 3, SimFault::ecc).ok());
  EXPECT_EQ(s.gpus[3].ecc_uncorrectable, 2);
  ASSERT_TRUE(apply_sim_fault(s, 2, SimFault::lost).ok());
  EXPECT_FALSE(s.gpus[2].responsive);
  ASSERT_TRUE(apply_sim_fault(s, 1, SimFault::hot).ok());
  EXPECT_GT(s.gpus[1].temperature_c, s.gpus[1].slowdown_c);
  ASSERT_TRUE(apply_sim_fault(s, 4, SimFault::xgmi).ok());
  EXPECT_EQ(s.gpus[4].xgmi_links_inactive, 1);
  ASSERT_TRUE(apply_sim_fault(s, 5, SimFault::pcie).ok());
  EXPECT_EQ(s.gpus[5].link_width, 8);
  ASSERT_TRUE(apply_sim_fault(s, 3, SimFault::clear).ok());
  EXPECT_EQ(s.gpus[3].ecc_uncorrectable, 0);
  EXPECT_FALSE(s.gpus[2].responsive);  // clear of one GPU leaves the others
  ASSERT_TRUE(apply_sim_fault(s, -1, SimFault::hang).ok());
  EXPECT_TRUE(s.hang);
  ASSERT_TRUE(apply_sim_fault(s, -1, SimFault::clear).ok());
  EXPECT_FALSE(s.hang);
  EXPECT_TRUE(s.gpus[2].responsive);
  Status missing = apply_sim_fault(s, 8, SimFault::ecc);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), "no GPU 8 on this node (it has 8)");
}

TEST(SimFaults, Names) {
  for (const char* name : {"ecc", "lost", "hot", "xgmi", "pcie", "hang", "clear"}) {
    auto f = sim_fault_from_string(name);
    ASSERT_TRUE(f) << name;
    EXPECT_EQ(to_string(*f), name);
  }
  EXPECT_FALSE(sim_fault_from_string("fire"));
}

TEST(SimFile, RoundTripAndMissingFile) {
  test::TempDir dir;
  std::string path = sim_file_path(dir.path() + "/", "n4");
  EXPECT_EQ(path, dir.path() + "/n4.json");
  auto fresh = load_sim_file(path, 4);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->gpus.size(), 4u);
  GpuSnapshot s = healthy_sim_snapshot(2);
  s.gpus[1].processes.push_back({12, 34, "python"});
  Status saved = save_sim_file(path, s);
  ASSERT_TRUE(saved) << saved.error();
  auto back = load_sim_file(path, 4);
  ASSERT_TRUE(back);
  EXPECT_EQ(to_json(*back), to_json(s));
}

TEST(SimFile, HandWrittenFilesNeedOnlyWhatDiffers) {
  auto s = gpu_snapshot_from_json(R"({"gpus": [{"index": 0}, {"index": 1, "ecc_uncorrectable": 1}]})");
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(s->gpus.size(), 2u);
  EXPECT_TRUE(s->gpus[0].responsive);
  EXPECT_EQ(s->gpus[0].temperature_c, -1);
  EXPECT_EQ(s->gpus[1].ecc_uncorrectable, 1);
  EXPECT_EQ("\"gpus\" must be a list", gpu_snapshot_from_json(R"({"gpus": 5})").error());
  EXPECT_EQ("expects a JSON object", gpu_snapshot_from_json("[]").error());
}

}  // namespace
}  // namespace safe
