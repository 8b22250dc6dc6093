// A service as the REST API shows it (GET /api/v1/workloads/svc-NAME) and its endpoints (GET
// .../endpoints and the endpoints file), from its record and the last pass's observation.
#pragma once

#include "common/json_value.hpp"
#include "kube-bridge/service_plan.hpp"
#include "kube-bridge/workload_phase.hpp"

namespace safe::bridge {

// Stopped; Running while a replica is ready; else Pending.
WorkloadPhase service_phase(const ServiceRecord& record, const ServiceObservation& seen);
Json render_service(const ServiceRecord& record, const ServiceObservation& seen);
// {"service": NAME, "endpoints": [{"host", "port", "ready", "replica"}]}: every running job of a
// replica (a replacement too, while it starts), ready or not.
Json render_endpoints(const ServiceRecord& record, const ServiceObservation& seen);

}  // namespace safe::bridge
