#include "controller/safed/clock_step.hpp"

#include <gtest/gtest.h>

namespace safe {
namespace {

TEST(ClockStepWatch, FindsStepsBothWaysAndIgnoresNoise) {
  ClockStepWatch w;
  EXPECT_EQ(0, w.observe(1'000'000'000, 5'000)) << "the first call only takes the readings";
  EXPECT_EQ(0, w.observe(1'000'001'000, 6'000));
  EXPECT_EQ(0, w.observe(1'000'003'900, 7'000)) << "1.9 s off: a slew or a late pass, not a step";
  EXPECT_EQ(3600, w.observe(1'003'604'900, 8'000));
  EXPECT_EQ(0, w.observe(1'003'605'900, 9'000)) << "measured from the last reading";
  EXPECT_EQ(-3600, w.observe(1'000'006'800, 10'000)) << "rounded to the nearest second";
  EXPECT_EQ(-2, w.observe(1'000'005'300, 10'500));
}

}  // namespace
}  // namespace safe
