#include "controller/safed/clock_step.hpp"

#include <cstdlib>

namespace safe {

long long ClockStepWatch::observe(long long wall_ms, long long steady_ms) {
  long long drift = (wall_ms - wall_ms_) - (steady_ms - steady_ms_);
  bool first = !started_;
  started_ = true;
  wall_ms_ = wall_ms;
  steady_ms_ = steady_ms;
  if (first || std::llabs(drift) < kThresholdMs) return 0;
  return (drift + (drift > 0 ? 500 : -500)) / 1000;  // to the nearest second
}

}  // namespace safe
