// What safed logs while it cannot read Slurm. One outage shows several errors: a pass that runs
// as slurmctld dies times out or reads zero bytes, the next ones find the port closed, and under
// a partition two errors may alternate pass after pass. So an outage is logged when it begins
// and again only for an error not yet logged in this outage; its end is logged once.
#pragma once

#include <set>
#include <string>

namespace safe {

class SlurmOutage {
 public:
  // A failed read of Slurm; true: log this error.
  bool failed(const std::string& error);
  // A successful read; true: an outage ended with it (log that).
  bool ended();
  // Failed reads in a row (0: Slurm answered last time).
  int failures() const { return failures_; }
  // Forget the reads so far without logging an end: a standby that becomes active judges Slurm
  // from its own passes.
  void reset();

 private:
  int failures_ = 0;
  // This outage's errors: Slurm's own texts ("cannot load jobs from slurmctld: " and
  // slurm_strerror's fixed table), so a few at most, and emptied when the outage ends.
  std::set<std::string> logged_;
};

}  // namespace safe
