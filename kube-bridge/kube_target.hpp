// Workloads on Kubernetes: created as an Indexed Job + headless Service (kube_manifests), watched
// (pods and nodes, resourceVersion, resumed after disconnects, relisted after 410 Gone) and
// failed over by SaFE's failure classifier (kube_attempt -> common/failure_classification): a
// retried failure suspends the attempt's Job (its pods get SIGTERM, which their entrypoint turns
// into the checkpoint signal), taints a faulty node, and once the pods have stopped or the
// signal's lead time is over, creates the next attempt without the node. The workloads' state
// lives on the API server, in a record annotation on each workload's current Job
// (kube_workload_record), so a restarted bridge rebuilds it (recover) and carries on.
//
// Observe, decide, act: what the API server says is parsed by pure functions
// (kube_observations), the failover decision is kube_attempt's, and this class makes the
// requests. Two locks: `state_mutex_` guards the workloads and is never held across a request to
// the API server, so the REST API's reads never wait on a slow API server; `act_mutex_` lets one
// actor at a time (a reconcile, a hang verdict, a stop, a create, the recovery) change
// workloads, from its read of a workload to its write of the result.
//
// With kubernetes.leader_election.lease set, several bridges run the target and the one holding
// the Lease acts (kube_lease); the others stand by: they refresh their workloads from the records
// every retry period to serve reads, and refuse creates and stops (503). A new leader recovers
// from the records before it acts.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "common/admission.hpp"
#include "common/config.hpp"
#include "common/result.hpp"
#include "kube-bridge/kube_attempt.hpp"
#include "kube-bridge/kube_client.hpp"
#include "kube-bridge/kube_hang.hpp"
#include "kube-bridge/kube_lease.hpp"
#include "kube-bridge/kube_workload_record.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {

class KubeTarget {
 public:
  // Uses the config's kube_bridge.kubernetes, failover and checkpoint sections. `clock` gives
  // the time in seconds (the wall clock unless a test passes its own).
  using Clock = std::function<std::time_t()>;
  KubeTarget(const SafeConfig& config, KubeClient& client, Clock clock = [] { return std::time(nullptr); });
  ~KubeTarget();

  // Refused with the HTTP status to answer and a message.
  struct Refusal {
    int status = 0;
    std::string message;
  };
  std::optional<Refusal> create(const WorkloadSpec& spec, const JobSettings& settings, const std::string& user,
                                uid_t uid, gid_t gid);
  std::optional<KubeWorkload> get(const std::string& name);
  std::vector<KubeWorkload> list();
  // Stops the workload's pods (checkpoint signal first), or with `remove` deletes its Jobs too.
  Status stop(const std::string& name, bool remove);
  // The output of the pod with completion index 0 of `attempt` (0: the current one).
  Result<std::string> logs(const std::string& name, int attempt);
  // Kubernetes nodes as the API shows them: name, Ready, SaFE's mark.
  struct NodeView {
    std::string name;
    bool ready = false;
    bool marked_unhealthy = false;
  };
  Result<std::vector<NodeView>> nodes();

  // Rebuilds the workloads from the records on SaFE's Jobs in the namespace (after a restart, or
  // on becoming the leader); with `tidy`, Jobs of attempts a record has moved past are deleted.
  // Fails when the Jobs cannot be listed. Until it has succeeded, create() answers 503.
  Status recover(bool tidy = true);
  bool recovered() const { return recovered_; }
  // Starts the threads: recovery (retried until it works), then the watches (pods, nodes), which
  // resume after disconnects, and a one-second tick for failovers waiting on their lead time and
  // for the log polls of hang detection (poll_hangs). The target owns them: its destructor stops
  // them (a watch idle in libcurl within about a second) and joins them.
  void start();
  void reconcile(const std::string& name);
  void reconcile_all();
  // Whether this bridge acts on its workloads: always without leader election; with it, while it
  // holds the Lease (renewed within the renew deadline) and has recovered since it took it.
  bool acting() const;
  // Holds the Lease within its renew deadline (always without leader election): what each
  // request that changes something is checked against, the catch-up's own included.
  bool leads() const;
  // This bridge's identity in the Lease, and the holder as last read ("" without election).
  std::string identity() const;
  std::string leader() const;
  // What a standby answers to a create or stop: that it stands by, and who leads.
  std::string standing_by() const;

 private:
  void watch_loop(const std::stop_token& stop, const std::string& collection, bool pods);
  // The leader election thread: tries every retry period, refreshes the workloads while standing
  // by, gives the Lease up when stopped. It does nothing slow that would delay a renewal.
  void elect(const std::stop_token& stop);
  // On the tick thread: a leader in a term it has not recovered in recovers from the records,
  // then reconciles every workload; only then does it act.
  void catch_up();
  void mark_recovered();
  // Waits `d`, or less when a stop is requested; true while the thread should go on.
  bool pause(const std::stop_token& stop, std::chrono::milliseconds d);
  // Waits until recovery has succeeded; false when a stop came first.
  bool wait_recovered(const std::stop_token& stop);
  // The pods of the attempt with what their nodes say; fails when the pods cannot be listed.
  Result<std::vector<PodObservation>> observe_pods(const std::string& name, int attempt);
  Status submit_attempt(const KubeWorkload& w);
  void delete_attempt(const std::string& name, int attempt);
  // Merge-patches the record onto the Job that holds it; `suspend` also stops the Job's pods.
  Status save(const KubeWorkload& w, bool suspend);
  // The workload as it is now, for an actor holding act_mutex_ to change and publish.
  std::optional<KubeWorkload> copy_of(const std::string& name);
  void publish(const KubeWorkload& w);
  // Whether the Job that holds the workload's record is suspended (read from the API server).
  bool job_suspended(const KubeWorkload& w);
  void reconcile_locked(KubeWorkload& w);
  void fail_over(KubeWorkload& w, const KubeDecision& d, std::time_t now);
  void finish_failover(KubeWorkload& w, std::time_t now);
  // Classified, not retried: the workload Fails; `stop_pods` suspends its Job (checkpoint signal).
  void give_up(KubeWorkload& w, const KubeDecision& d, bool stop_pods, std::time_t now);
  // Hang detection (kube_hang): each workload with a hangTimeout whose look is due gets its
  // running pods' logs read for growth, without holding the lock, then judged under it.
  void poll_hangs();
  int lead_time(const KubeWorkload& w) const;

  KubernetesConfig kube_;
  FailoverConfig failover_;
  CheckpointConfig checkpoint_;
  KubeClient& client_;
  Clock clock_;
  std::mutex act_mutex_;    // held by the one actor changing workloads (see the top of this file)
  std::mutex state_mutex_;  // guards workloads_; never held across a request to the API server
  std::map<std::string, KubeWorkload> workloads_;
  // Per workload with a hangTimeout: what the log polls have seen of its current attempt. Kept in
  // memory only: after a restart every pod starts with a fresh hangTimeout.
  struct HangWatch {
    int attempt = 0;
    std::time_t last_poll = 0;
    std::time_t next_poll = 0;
    std::map<std::string, std::time_t> last_output;  // pod -> when its log last grew
  };
  std::map<std::string, HangWatch> hang_watch_;  // guarded by act_mutex_
  std::atomic<bool> recovered_{false};
  // Leader election (kubernetes.leader_election.lease): null without.
  std::unique_ptr<KubeLeaseApi> lease_api_;
  std::unique_ptr<LeaseElector> elector_;
  std::atomic<long> term_{0};            // the elector's term while it leads, else 0
  std::atomic<long> caught_up_term_{0};  // the term in which the workloads were last recovered
  std::atomic<std::chrono::steady_clock::rep> lead_until_{0};  // leads before this (steady clock)
  mutable std::mutex leader_mutex_;  // guards leader_
  std::string leader_;
  std::mutex wake_mutex_;               // with wake_: pauses that a stop or the recovery ends
  std::condition_variable_any wake_;
  std::vector<std::jthread> threads_;  // last: stopped and joined before the members they use go
};

}  // namespace safe::bridge
