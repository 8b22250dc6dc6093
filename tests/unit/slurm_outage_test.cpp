#include "controller/safed/slurm_outage.hpp"

#include <gtest/gtest.h>

namespace safe {
namespace {

TEST(SlurmOutage, LogsEachErrorOnceAndTheEndOnce) {
  SlurmOutage o;
  EXPECT_FALSE(o.ended()) << "Slurm answered and no outage was open";
  EXPECT_TRUE(o.failed("Socket timed out on send/recv operation")) << "the outage begins";
  EXPECT_TRUE(o.failed("Unable to contact slurm controller (connect failure)")) << "a new error";
  EXPECT_FALSE(o.failed("Unable to contact slurm controller (connect failure)")) << "a repeat";
  EXPECT_FALSE(o.failed("Socket timed out on send/recv operation")) << "alternating errors log nothing more";
  EXPECT_EQ(4, o.failures());
  EXPECT_TRUE(o.ended());
  EXPECT_EQ(0, o.failures());
  EXPECT_FALSE(o.ended()) << "the end is logged once";
  EXPECT_TRUE(o.failed("Socket timed out on send/recv operation")) << "a new outage logs its errors again";
}

TEST(SlurmOutage, AResetEndsTheOutageWithoutAnEnd) {
  SlurmOutage o;
  o.failed("connect failure");
  o.reset();
  EXPECT_EQ(0, o.failures());
  EXPECT_FALSE(o.ended());
  EXPECT_TRUE(o.failed("connect failure"));
}

}  // namespace
}  // namespace safe
