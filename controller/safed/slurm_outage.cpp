#include "controller/safed/slurm_outage.hpp"

namespace safe {

bool SlurmOutage::failed(const std::string& error) {
  ++failures_;
  return logged_.insert(error).second;
}

bool SlurmOutage::ended() {
  bool was_out = failures_ > 0;
  reset();
  return was_out;
}

void SlurmOutage::reset() {
  failures_ = 0;
  logged_.clear();
}

}  // namespace safe
