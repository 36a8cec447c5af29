#pragma once

// The Spring-Boot-style actuator endpoints TBMQ exposes, on Starling's router:
//   GET /actuator/health      the health registry's report; 200 when UP or DEGRADED, else 503
//   GET /actuator/health/readiness  the same report (Kubernetes' readinessProbe)
//   GET /actuator/health/liveness   the event loops only, never the stores: 200 unless a loop
//                                   is stuck (Kubernetes' livenessProbe)
//   GET /actuator/prometheus  metrics::registry::serialize(), text format 0.0.4

#include "http/health.h"
#include "http/router.h"
#include "metrics/registry.h"

#include <string_view>

namespace starling::http {

inline constexpr std::string_view prometheus_content_type = "text/plain; version=0.0.4";

// Both objects must outlive the server the router goes into; the handlers hold references.
void add_actuator_routes(router& routes, health_registry& health, metrics::registry& metrics);

}  // namespace starling::http
