// The REST API as a pure function of a request: one route table ({method, pattern, handler}),
// authentication, authorization, validation, and the workloads' targets (Slurm, Kubernetes)
// behind one WorkloadTarget interface. The HTTP server (http_server.cpp) only copies requests in
// and responses out, so everything here is unit-tested without sockets, Slurm or munged.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <variant>
#include <string>
#include <utility>
#include <vector>

#include "common/config.hpp"
#include "common/http_service.hpp"
#include "common/json_value.hpp"
#include "common/authenticator.hpp"
#include "kube-bridge/bridge_metrics.hpp"
#include "kube-bridge/console_session.hpp"
#include "kube-bridge/controller_history.hpp"
#include "kube-bridge/kube_target.hpp"
#include "common/user_file.hpp"
#include "kube-bridge/kube_workload_target.hpp"
#include "kube-bridge/service_controller.hpp"
#include "kube-bridge/slurm_cache.hpp"
#include "kube-bridge/slurm_target.hpp"
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
            BridgeMetrics& metrics, UserWorkDirs& work_dirs,
            SlurmTarget::OutputReader read_output = read_user_file_tail);

  ApiResponse handle(const ApiRequest& request);
  // Enables "target": "kubernetes" (kube_bridge.kubernetes configured and reachable).
  void set_kube_target(KubeTarget* kube);
  // Enables kind service (kube_bridge.state_dir set).
  void set_service_controller(ServiceController* services) { services_ = services; }
  // safed's history for /events (attempts with classifications, failovers), when deployed.
  void set_controller_history(ControllerHistory* history) {
    history_ = history;
    slurm_target_.set_controller_history(history);
  }

 private:
  // The path's segments after /api/v1/ that a route's {} segments matched, in order.
  using Captures = std::vector<std::string>;
  struct Route {
    std::string_view method;
    std::string_view pattern;  // segments after /api/v1, "{}" matching any one
    ApiResponse (BridgeApi::*handler)(const ApiRequest&, const Principal&, const Captures&);
  };
  static const std::vector<Route>& routes();

  ApiResponse create_workload(const ApiRequest& request, const Principal& who, const Captures&);
  ApiResponse list_workloads(const ApiRequest& request, const Principal& who, const Captures&);
  ApiResponse get_workload(const ApiRequest& request, const Principal& who, const Captures& id);
  ApiResponse workload_events(const ApiRequest& request, const Principal& who, const Captures& id);
  ApiResponse stop_workload(const ApiRequest& request, const Principal& who, const Captures& id);
  ApiResponse delete_workload(const ApiRequest& request, const Principal& who, const Captures& id);
  ApiResponse workload_logs(const ApiRequest& request, const Principal& who, const Captures& id);
  ApiResponse workload_endpoints(const ApiRequest& request, const Principal& who, const Captures& id);
  ApiResponse create_service(const WorkloadSpec& spec, const Principal& who, const AdmissionDecision& decision);
  ApiResponse list_workspaces(const ApiRequest& request, const Principal& who, const Captures&);
  ApiResponse get_workspace(const ApiRequest& request, const Principal& who, const Captures& name);
  ApiResponse list_nodes(const ApiRequest& request, const Principal& who, const Captures&);
  ApiResponse list_failovers(const ApiRequest& request, const Principal& who, const Captures&);
  ApiResponse node_faults(const ApiRequest& request, const Principal& who, const Captures& name);
  ApiResponse ettr_history(const ApiRequest& request, const Principal& who, const Captures&);
  ApiResponse gpu_health(const ApiRequest& request, const Principal& who, const Captures&);

  // The target `id` names and the workload, when `who` may see it; else the answer to give.
  struct Found {
    WorkloadTarget* target = nullptr;
    ListedWorkload workload;
  };
  std::variant<Found, ApiResponse> find_workload(const std::string& id, const Principal& who);
  ApiResponse stop_or_delete(const Principal& who, const std::string& id, bool remove);
  ApiResponse workspaces(const Principal& who, const std::string& only);
  // Who asks: the Authorization header, else the console's session cookie, whose state-changing
  // requests also need the CSRF token (bridge_console.cpp); else the 401 or 403 to answer.
  std::variant<Principal, ApiResponse> requester(const ApiRequest& request);
  // /console/...: the console's files and its session.
  ApiResponse console(const ApiRequest& request, const std::vector<std::string>& parts);
  ApiResponse console_session(const ApiRequest& request);

  BridgeSettings settings_;
  Authenticator& auth_;
  UserDirectory& users_;
  SlurmCache& slurm_;
  BridgeMetrics& metrics_;
  UserWorkDirs& work_dirs_;
  SlurmTarget slurm_target_;
  KubeTarget* kube_ = nullptr;
  ServiceController* services_ = nullptr;
  ControllerHistory* history_ = nullptr;
  std::unique_ptr<KubeWorkloadTarget> kube_target_;
  ConsoleSessions sessions_;
};

// {"error": message} with `status`.
ApiResponse error_response(int status, const std::string& message);
// `body` as compact JSON with `status`.
ApiResponse json_response(int status, const json_t* body);

}  // namespace safe::bridge
