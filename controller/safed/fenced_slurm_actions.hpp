// The Slurm actions of a safed that may have lost the active role (controller.ha): each is sent to
// Slurm only while `may_act` says this instance still holds the lease under the fencing token it
// acts with, checked right before the call. Actions recorded before they are taken are fenced by
// the journal as well; this covers those recorded after (a DOWN the probes call for, a re-drain,
// a release) and a pass that outlived its lease.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "common/slurm/client.hpp"

namespace safe {

class FencedSlurmActions : public SlurmActions {
 public:
  FencedSlurmActions(SlurmActions& slurm, std::function<bool()> may_act)
      : slurm_(slurm), may_act_(std::move(may_act)) {}

  Status requeue(std::uint32_t job_id) override {
    return fenced([&] { return slurm_.requeue(job_id); });
  }
  Status update_job(const JobChange& change) override {
    return fenced([&] { return slurm_.update_job(change); });
  }
  Status signal_job(std::uint32_t job_id, int signo) override {
    return fenced([&] { return slurm_.signal_job(job_id, signo); });
  }
  Status drain_node(const std::string& node, const std::string& reason) override {
    return fenced([&] { return slurm_.drain_node(node, reason); });
  }
  Status resume_node(const std::string& node) override {
    return fenced([&] { return slurm_.resume_node(node); });
  }
  Status down_node(const std::string& node, const std::string& reason) override {
    return fenced([&] { return slurm_.down_node(node, reason); });
  }
  Status put_reservation(const ReservationChange& change) override {
    return fenced([&] { return slurm_.put_reservation(change); });
  }

 private:
  template <class Call>
  Status fenced(Call call) {
    if (!may_act_()) return Error{"not sent to Slurm: this safed is no longer the active one (controller.ha)"};
    return call();
  }
  SlurmActions& slurm_;
  std::function<bool()> may_act_;
};

}  // namespace safe
