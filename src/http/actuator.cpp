#include "http/actuator.h"

namespace starling::http {

void add_actuator_routes(router& routes, health_registry& health, metrics::registry& metrics) {
    routes.add(verb::get, "/actuator/health", [&health](const request&) {
        auto report = health.evaluate();
        return make_response(
            is_serving(report.status) ? status_code::ok : status_code::service_unavailable,
            "application/json", report.body.dump());
    });
    // Kubernetes' probes (Spring Boot's paths). Readiness is the full report: stores reachable,
    // listeners open, the node running. Liveness leaves the stores out (health.h).
    routes.add(verb::get, "/actuator/health/readiness", [&health](const request&) {
        auto report = health.evaluate();
        return make_response(
            is_serving(report.status) ? status_code::ok : status_code::service_unavailable,
            "application/json", report.body.dump());
    });
    routes.add(verb::get, "/actuator/health/liveness", [&health](const request&) {
        auto report = health.evaluate_liveness();
        return make_response(report.status == health_status::down ? status_code::service_unavailable
                                                                  : status_code::ok,
                             "application/json", report.body.dump());
    });
    routes.add(verb::get, "/actuator/prometheus", [&metrics](const request&) {
        return make_response(status_code::ok, prometheus_content_type, metrics.serialize());
    });
}

}  // namespace starling::http
