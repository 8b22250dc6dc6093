// The HTTP(S) front of the bridge: SaFE's HttpService (common/http_service.hpp: event thread for
// connections, workers for requests, limits for clients) handing every request to BridgeApi,
// logging it (user, method, path, status, duration) and counting it in the bridge's metrics.
// /healthz is answered on the event thread, neither logged nor counted (probes are no traffic).
#pragma once

#include <memory>

#include "common/http_service.hpp"
#include "kube-bridge/bridge_api.hpp"
#include "kube-bridge/bridge_metrics.hpp"

namespace safe::bridge {

class BridgeHttpServer {
 public:
  BridgeHttpServer(HttpServiceSettings settings, BridgeApi& api, BridgeMetrics& metrics);
  Status start();
  int port() const { return service_.port(); }
  void stop() { service_.stop(); }

 private:
  HttpService service_;
};

}  // namespace safe::bridge
