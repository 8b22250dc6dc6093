// The GPU grid's one JSON format: what the health checker writes, safed reads back (and refuses
// when it is not a grid, whoever sent it), and keeps per node.
#include "common/gpu_grid.hpp"

#include <gtest/gtest.h>

#include "controller/safed/node_gpu_reports.hpp"

namespace safe {
namespace {

NodeGpuReport sample() {
  NodeGpuReport r;
  r.node = "n1";
  r.time = 1800000000;
  r.backend = "sim";
  r.grid.checks = {"gpu_responsive", "ecc_uncorrectable"};
  r.grid.gpus = {{0, "0000:01:00.0", {{"ecc_uncorrectable", "gpu0 uncorrectable ECC=2"}}}, {1, "0000:02:00.0", {}}};
  r.grid.gpu_count = "gpu2 missing";
  return r;
}

TEST(GpuGridFormat, RoundTrips) {
  auto back = parse_node_gpu_report(to_json(sample()));
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->node, "n1");
  EXPECT_EQ(back->time, 1800000000);
  EXPECT_EQ(back->grid.checks, sample().grid.checks);
  ASSERT_EQ(back->grid.gpus.size(), 2u);
  EXPECT_EQ(back->grid.gpus[0].failed, sample().grid.gpus[0].failed);
  EXPECT_EQ(back->grid.gpus[1].bus_id, "0000:02:00.0");
  EXPECT_EQ(back->grid.gpu_count, "gpu2 missing");
}

TEST(GpuGridFormat, RefusesWhatIsNotAGrid) {
  std::string good = to_json(sample());
  auto with = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  for (const std::string& bad : {std::string("[]"), std::string("{"), with(R"("node":"n1")", R"("node":"n1/../x")"),
                                  with(R"("time":1800000000)", R"("time":-1)"), with(R"("index":0)", R"("index":5000)"),
                                  with(R"("checks":[)", R"("checks":[1,)"), with(R"("backend":"sim")", R"("backend":7)"),
                                  with(R"("failed":[])", R"("failed":[{"check":"x"}])"),
                                  with(R"("backend":"sim")", R"("backend":")" + std::string(2000, 'a') + "\"")}) {
    auto r = parse_node_gpu_report(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  std::string many = R"({"node":"n1","time":1,"backend":"","gpu_count":"","unknown":"","checks":[],"gpus":[)";
  for (int i = 0; i < 65; ++i) many += std::string(i ? "," : "") + R"({"index":0,"bus_id":"","failed":[]})";
  EXPECT_FALSE(parse_node_gpu_report(many + "]}").ok()) << "65 GPUs";
}

TEST(GpuGridFormat, LongTextsAreClippedNotRefusedAndEachGpuComesOnce) {
  std::string long_error = std::string(300, 'x') + "\xc3\xa9" + std::string(300, 'y');
  std::string clipped = clip_grid_text(long_error);
  EXPECT_EQ(clipped.size(), 256u);
  EXPECT_TRUE(clipped.ends_with("...")) << clipped;
  std::string at_a_character = clip_grid_text(std::string(252, 'a') + "\xc3\xa9" + std::string(10, 'b'));
  EXPECT_EQ(at_a_character, std::string(252, 'a') + "...") << "not inside the 2-byte character";
  EXPECT_EQ(clip_grid_text("short \xff"), "short \xef\xbf\xbd") << "invalid UTF-8 replaced";
  NodeGpuReport r = sample();
  r.grid.unknown = clip_grid_text(long_error);
  EXPECT_TRUE(parse_node_gpu_report(to_json(r)).ok());
  r.grid.gpus[1].index = 0;
  EXPECT_FALSE(parse_node_gpu_report(to_json(r)).ok()) << "GPU 0 twice";
}

TEST(NodeGpuReports, KeepsTheNewestOfEachNodeSlurmHas) {
  NodeGpuReports reports;
  NodeGpuReport r = sample();
  EXPECT_FALSE(reports.put(r, 100).ok()) << "before safed has read Slurm's nodes";
  reports.set_nodes({"n1", "n2"});
  // Whether put kept it; false too for a refusal (a separate check).
  auto kept = [&](long long now) {
    Result<bool> k = reports.put(r, now);
    EXPECT_TRUE(k.ok()) << k.error();
    return k.ok() && *k;
  };
  EXPECT_TRUE(kept(100));
  r.time = 1800000060;
  EXPECT_TRUE(kept(160));
  r.time = 1800000030;  // an older run's, delivered late
  EXPECT_FALSE(kept(170));
  r.node = "n9";
  EXPECT_FALSE(reports.put(r, 170).ok()) << "Slurm has no n9";
  std::string doc = reports.render_json();
  EXPECT_NE(doc.find(R"("time": 1800000060)"), std::string::npos) << doc;
  EXPECT_NE(doc.find(R"("received": 160)"), std::string::npos) << doc;
  EXPECT_EQ(doc.find("1800000000"), std::string::npos) << "only the newest: " << doc;
  EXPECT_EQ(doc.find("1800000030"), std::string::npos) << "not the late older one: " << doc;
  EXPECT_EQ(doc.find("n9"), std::string::npos) << doc;
  r.node = "n1";  // still the older run's time: the node's clock went back
  EXPECT_TRUE(kept(160 + 300)) << "after 5 minutes it is taken";
  reports.set_nodes({"n2"});
  EXPECT_EQ(reports.render_json().find("n1"), std::string::npos) << "n1 left Slurm: its grid goes";
}

}  // namespace
}  // namespace safe
