// The REST API as a pure function of a request: routing, authentication, authorization,
// validation, and the Slurm target through the bridge's SlurmCache over the Slurm seam. The HTTP server
// (http_server.cpp) only copies requests in and responses out, so everything here is unit-tested
// without sockets, Slurm or munged.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/http_service.hpp"
#include "common/authenticator.hpp"
#include "kube-bridge/bridge_metrics.hpp"
#include "kube-bridge/controller_history.hpp"
#include "kube-bridge/kube_target.hpp"
#include "kube-bridge/slurm_cache.hpp"
#include "kube-bridge/user_work_dir.hpp"

namespace safe::bridge {

using ApiRequest = HttpRequest;

struct ApiResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string user;  // who asked, for the request log ("-" when unauthenticated)
};

struct BridgeSettings {
  SafeConfig config;
  std::string openapi_document;     // served at /openapi.json
};

class BridgeApi {
 public:
  BridgeApi(BridgeSettings settings, Authenticator& auth, UserDirectory& users, SlurmCache& slurm,
            BridgeMetrics& metrics, UserWorkDirs& work_dirs)
      : settings_(std::move(settings)), auth_(auth), users_(users), slurm_(slurm), metrics_(metrics),
        work_dirs_(work_dirs) {}

  ApiResponse handle(const ApiRequest& request);
  // Enables "target": "kubernetes" (kube_bridge.kubernetes configured and reachable).
  void set_kube_target(KubeTarget* kube) { kube_ = kube; }
  // safed's history for /events (attempts with classifications, failovers), when deployed.
  void set_controller_history(ControllerHistory* history) { history_ = history; }

 private:
  ApiResponse route(const ApiRequest& request, const Principal& who, const std::vector<std::string>& parts);
  ApiResponse create_workload(const ApiRequest& request, const Principal& who);
  ApiResponse list_workloads(const ApiRequest& request, const Principal& who);
  ApiResponse workload_action(const ApiRequest& request, const Principal& who, const std::string& id,
                              const std::string& action);
  ApiResponse list_workspaces(const Principal& who, const std::string& only);
  ApiResponse list_nodes();
  ApiResponse kube_workload_action(const ApiRequest& request, const Principal& who, const std::string& name,
                                   const std::string& action);

  // The bridge's workloads in one job snapshot, each rendered once: list requests then only
  // filter and concatenate, whatever their rate (the snapshot changes at most once a second).
  struct IndexedWorkload {
    std::uint32_t job_id;
    uid_t uid;
    WorkloadPhase phase;  // for the state filter
    std::string workspace;
    std::string json;
  };
  struct WorkloadIndex {
    JobSnapshot snapshot;
    std::vector<IndexedWorkload> workloads;
  };
  std::shared_ptr<const WorkloadIndex> workload_index(const JobSnapshot& snapshot);
  std::mutex index_mutex_;
  std::shared_ptr<const WorkloadIndex> index_;

  BridgeSettings settings_;
  Authenticator& auth_;
  UserDirectory& users_;
  SlurmCache& slurm_;
  BridgeMetrics& metrics_;
  UserWorkDirs& work_dirs_;
  KubeTarget* kube_ = nullptr;
  ControllerHistory* history_ = nullptr;
  std::mutex deleted_mutex_;
  // DELETEd jobs stay in Slurm for MinJobAge; hidden until Slurm forgets them (then dropped).
  std::set<std::uint32_t> deleted_;
};

// {"error": message} with `status`.
ApiResponse error_response(int status, const std::string& message);

}  // namespace safe::bridge
