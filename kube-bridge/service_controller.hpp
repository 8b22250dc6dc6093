// Services on Slurm (kind service): one Slurm job per replica, kept going by the bridge. Each pass
// (every second) reads the jobs and nodes from the bridge's SlurmCache, probes every running
// replica at once (replica_probe.hpp), lets plan_service decide (service_plan.hpp), cancels and
// submits what it decided, writes each changed service's record and its endpoints file, and
// publishes the views the API reads: reads (list, get, events, endpoints, logs) never wait on a
// pass; create, stop and delete wait for the pass under way to end.
//
// Why one job per replica (not one heterogeneous job): a replica fails, moves and scales alone;
// a heterogeneous job starts, fails and is requeued as a whole.
//
// State: DIR/services/NAME.json (service_record.hpp; mode 0600 in a 0700 directory: specs hold
// users' environments), DIR/endpoints/NAME.json for a load balancer ({"service", "endpoints":
// [{"host", "port", "ready", "replica"}]}, readable by all). DIR must be the bridge's user's
// (root's) and writable by no one else. A deleted service's record stays, marked deleted, until
// none of its jobs runs. One bridge runs a cluster's services: two bridges with the same state would both
// keep the replicas going.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "common/user_directory.hpp"
#include "kube-bridge/replica_probe.hpp"
#include "kube-bridge/service_plan.hpp"
#include "kube-bridge/slurm_cache.hpp"
#include "kube-bridge/slurm_target.hpp"
#include "kube-bridge/workload_target.hpp"

namespace safe::bridge {

struct ServiceSettings {
  std::string state_dir;  // "": services are not offered (the API refuses kind service)
  std::chrono::milliseconds period{1000};
  std::chrono::milliseconds probe_deadline{800};
  int starts_per_minute = 60;  // replica jobs started, across every service
  int max_services_per_user = 32;
};

struct CreateOutcome {
  int status = 201;  // 201; 409: the name is taken; 422: the user's services are at their cap; 503
  std::string text;  // the id (201), else why
};

class ServiceController : public WorkloadTarget {
 public:
  using Prober = std::function<std::vector<ProbeResult>(const std::vector<ProbeRequest>&, std::chrono::milliseconds)>;
  using Clock = std::function<std::time_t()>;
  ServiceController(ServiceSettings settings, SlurmCache& slurm, UserDirectory& users, SlurmTarget::OutputReader read_output,
                    Prober prober = probe_all, Clock clock = [] { return std::time(nullptr); });
  ~ServiceController() override;

  // Reads the services the state directory holds; a record that does not read is left alone and
  // logged. Fails when the directory cannot be made or read.
  Status load();
  void start();  // the pass thread
  void stop_thread();
  // One pass (the thread's loop calls it; tests call it directly).
  void pass();

  CreateOutcome create(const WorkloadSpec& spec, const UserRecord& user, const std::string& work_dir);
  // {"endpoints": [...]}, as the endpoints file has them; nullopt for no such service.
  std::optional<std::string> endpoints(const std::string& id);
  // The services' Prometheus metrics, totals over every service (the bridge's /metrics is open:
  // no service's or user's name in it).
  std::string metrics_text();

  bool owns(const std::string& id) const override { return id.starts_with("svc-"); }
  Result<WorkloadList> list() override;
  Result<std::optional<ListedWorkload>> find(const std::string& id) override;
  Result<EventList> events(const ListedWorkload& w) override;
  Result<std::string> stop(const ListedWorkload& w, bool remove) override;
  Result<WorkloadLog> logs(const ListedWorkload& w, const LogRequest& request) override;

 private:
  struct Service {
    ServiceRecord record;
    ServiceObservation seen;                 // the last pass's
    std::map<std::uint32_t, int> liveness_failures;  // in a row, by job
    std::set<std::uint32_t> liveness_passed;         // jobs whose liveness probe passed once
    std::string saved;                       // the record's file as last written
    std::string endpoints_json;              // as last written
  };
  struct LogSource {
    uid_t uid = 0;
    std::string work_dir;
    std::map<int, std::uint32_t> jobs;  // replica -> its job, or its last one while it waits
  };
  struct Published {
    std::vector<ListedWorkload> workloads;
    std::map<std::string, std::string> endpoints;  // by name
    std::map<std::string, std::vector<ServiceEvent>> events;
    std::map<std::string, LogSource> logs;
    std::string metrics;
  };
  // Cancels and submits, recording each start's outcome in the service's record.
  void act(Service& s, const ServicePlan& plan);
  void save(Service& s);
  void publish();  // under mutex_
  int start_budget();

  ServiceSettings settings_;
  SlurmCache& slurm_;
  UserDirectory& users_;
  SlurmTarget::OutputReader read_output_;
  Prober prober_;
  Clock clock_;

  std::mutex mutex_;  // services_, and a pass as a whole (create and stop wait for a pass to end)
  std::map<std::string, Service> services_;
  std::set<std::string> unreadable_;  // records that did not load: their names stay taken
  std::size_t first_ = 0;             // which service plans first this pass (round robin)
  double start_tokens_ = 0;
  std::time_t tokens_at_ = 0;

  std::mutex published_mutex_;
  std::shared_ptr<const Published> published_ = std::make_shared<Published>();

  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool wake_pending_ = false;  // a create asks for a pass now
  std::thread thread_;
};

}  // namespace safe::bridge
