// Workloads on Kubernetes: created as an Indexed Job + headless Service (kube_manifests), watched
// (pods and nodes, resourceVersion, resumed after disconnects, relisted after 410 Gone) and
// failed over by the decision table of common/kube_failover: a node fault taints the node and
// recreates the Job without it (attempt + 1) while retries remain; a user error fails it.
// Workload state is kept in memory: a restarted bridge does not know earlier Kubernetes workloads.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <ctime>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/admission.hpp"
#include "common/config.hpp"
#include "kube-bridge/kube_client.hpp"
#include "kube-bridge/kube_node_mark.hpp"
#include "kube-bridge/workload_spec.hpp"

namespace safe::bridge {

struct KubeEvent {
  std::string type;  // Submitted, Running, Failover, Succeeded, Failed, Stopped
  std::time_t time = 0;
  int attempt = 1;
  std::string message;
};

struct KubeWorkload {
  WorkloadSpec spec;
  JobSettings settings;
  std::string user;
  uid_t uid = 0;
  int attempt = 1;
  std::vector<std::string> avoid_nodes;
  std::string phase = "Pending";
  std::string nodes;  // where the current attempt's pods run
  std::time_t submit_time = 0;
  std::vector<KubeEvent> events;
  bool deleted = false;
};

class KubeTarget {
 public:
  KubeTarget(KubernetesConfig config, KubeClient& client) : config_(std::move(config)), client_(client) {}
  ~KubeTarget();

  // nullopt on success, else {HTTP status, message}.
  std::optional<std::pair<int, std::string>> create(const WorkloadSpec& spec, const JobSettings& settings,
                                                    const std::string& user, uid_t uid);
  std::optional<KubeWorkload> get(const std::string& name);
  std::vector<KubeWorkload> list();
  bool stop(const std::string& name, bool remove, std::string& error);
  // The output of the pod with completion index 0 of `attempt` (0: the current one).
  std::optional<std::string> logs(const std::string& name, int attempt, std::string& error);
  // Kubernetes nodes as the API shows them: name, Ready, SaFE's mark.
  struct NodeView {
    std::string name;
    bool ready = false;
    bool marked_unhealthy = false;
  };
  std::vector<NodeView> nodes(std::string& error);

  // Starts the watch threads (pods, nodes); they resume after disconnects until destruction.
  void start();
  void reconcile(const std::string& name);
  void reconcile_all();
  long long watch_restarts() const { return watch_restarts_; }

 private:
  void watch_loop(const std::string& collection, bool pods);
  bool submit_attempt(KubeWorkload& w, std::string& error);
  void delete_attempt(const KubeWorkload& w);

  KubernetesConfig config_;
  KubeClient& client_;
  std::mutex mutex_;
  std::map<std::string, KubeWorkload> workloads_;
  std::atomic<bool> stopping_{false};
  std::atomic<long long> watch_restarts_{0};
};

}  // namespace safe::bridge
