// Memory, mounts, IB ports and NUMA locality against the fixture trees, both sides of each limit.
#include <gtest/gtest.h>
#include <unistd.h>

#include "healthcheck/host_checks.hpp"
#include "tests/unit/health_test_support.hpp"

namespace safe {
namespace {

class HostChecks : public ::testing::Test {
 protected:
  test::TempDir dir;
  NodeFs healthy{test::copy_fixture(dir, "node-healthy")};
  NodeFs faulty{test::copy_fixture(dir, "node-faulty")};
};

TEST_F(HostChecks, Memory) {
  EXPECT_EQ(check_memory(healthy, 0).status, CheckStatus::pass);  // not checked
  EXPECT_EQ(check_memory(healthy, 2015).status, CheckStatus::pass);  // 2015 GiB present
  EXPECT_EQ(check_memory(healthy, 2016).status, CheckStatus::fail);
  CheckResult r = check_memory(faulty, 2015);
  EXPECT_EQ(r.status, CheckStatus::fail);
  EXPECT_EQ(r.detail, "memory 1007 GiB < 2015 GiB");
  EXPECT_EQ(check_memory(NodeFs(dir.path()), 1).status, CheckStatus::unknown);
}

TEST_F(HostChecks, MountPresentWritableWithSpace) {
  EXPECT_EQ(check_mounts(healthy, {}).status, CheckStatus::pass);
  EXPECT_EQ(check_mounts(healthy, {{"/scratch", 0, 0}}).status, CheckStatus::pass);
  CheckResult too_full = check_mounts(healthy, {{"/scratch", 1 << 30, 0}});
  EXPECT_EQ(too_full.status, CheckStatus::fail);
  EXPECT_NE(too_full.detail.find("/scratch free"), std::string::npos) << too_full.detail;
  CheckResult inodes = check_mounts(healthy, {{"/scratch", 0, 100}});
  // tmpfs and most file systems never have 100% inodes free once the fixture is there.
  EXPECT_EQ(inodes.status, CheckStatus::fail) << inodes.detail;
}

TEST_F(HostChecks, MountMissingOrReadOnly) {
  CheckResult missing = check_mounts(faulty, {{"/scratch", 0, 0}});
  EXPECT_EQ(missing.status, CheckStatus::fail);
  EXPECT_EQ(missing.detail, "/scratch not mounted");
  CheckResult ro = check_mounts(healthy, {{"/datasets", 0, 0}});
  EXPECT_EQ(ro.detail, "/datasets mounted read-only");
  CheckResult not_writable = check_mounts(healthy, {{"/", 0, 0}});  // the fixture root itself, mounted rw
  EXPECT_EQ(not_writable.status, CheckStatus::pass) << not_writable.detail;
}

// A user who can write to a checked mount plants files (and links) under the names a write probe
// with a predictable name would use: the probe must still pass, never drain the node.
TEST_F(HostChecks, MountProbeIsNotFooledByPlantedNames) {
  std::string scratch = healthy.path("/scratch");
  for (int pid = getpid() - 50; pid < getpid() + 50; ++pid) {
    std::string name = scratch + "/.safe-healthcheck." + std::to_string(pid);
    ASSERT_EQ(0, symlink("/nonexistent", name.c_str()));
  }
  CheckResult r = check_mounts(healthy, {{"/scratch", 0, 0}});
  EXPECT_EQ(r.status, CheckStatus::pass) << r.detail;
}

TEST_F(HostChecks, IbPorts) {
  EXPECT_EQ(check_ib_ports(faulty, 0).status, CheckStatus::pass);  // not checked
  EXPECT_EQ(check_ib_ports(healthy, 400).status, CheckStatus::pass);
  CheckResult slow = check_ib_ports(healthy, 401);
  EXPECT_EQ(slow.status, CheckStatus::fail);
  EXPECT_EQ(slow.detail, "IB mlx5_0/1 rate 400 < 401 Gb/s (+1 more)");
  CheckResult down = check_ib_ports(faulty, 200);
  EXPECT_EQ(down.detail, "IB mlx5_1/1 state DOWN");
  EXPECT_EQ(check_ib_ports(NodeFs(dir.path()), 100).detail, "no InfiniBand/RDMA ports found");
}

TEST(NumaReference, ParsesAndRejects) {
  auto map = parse_numa_reference("# ref\n0000:c1:00.0 0\n\n0000:c2:00.0 1  # second\n");
  ASSERT_TRUE(map);
  EXPECT_EQ(map->size(), 2u);
  EXPECT_EQ(map->at("0000:c2:00.0"), 1);
  EXPECT_EQ(parse_numa_reference("0000:c1:00.0\n").error(), "line 1: expects 'BUS_ID NUMA_NODE'");
  EXPECT_FALSE(parse_numa_reference("0000:c1:00.0 x\n"));
  auto round = parse_numa_reference(format_numa_map(*map));
  ASSERT_TRUE(round);
  EXPECT_EQ(*round, *map);
}

TEST(NumaCompare, MatchMovedMissingExtra) {
  NumaMap ref = {{"0000:c1:00.0", 0}, {"0000:c2:00.0", 1}};
  EXPECT_EQ(compare_numa(ref, ref).status, CheckStatus::pass);
  EXPECT_EQ(compare_numa(ref, {{"0000:c1:00.0", 0}, {"0000:c2:00.0", 0}}).detail, "0000:c2:00.0 on NUMA 0, expected 1");
  EXPECT_EQ(compare_numa(ref, {{"0000:c1:00.0", 0}}).detail, "0000:c2:00.0 missing (expected on NUMA 1)");
  EXPECT_EQ(compare_numa({{"0000:c1:00.0", 0}}, ref).detail, "0000:c2:00.0 (NUMA 1) not in the reference");
}

TEST(NumaCompare, FromSimSnapshot) {
  NumaMap m = numa_map_from_snapshot(healthy_sim_snapshot(8));
  EXPECT_EQ(m.size(), 8u);
  EXPECT_EQ(m.at("0000:11:00.0"), 0);
  EXPECT_EQ(m.at("0000:81:00.0"), 1);
}

}  // namespace
}  // namespace safe
