#include "http/actuator.h"

namespace starling::http {

void add_actuator_routes(router& routes, health_registry& health, metrics::registry& metrics) {
    routes.add(verb::get, "/actuator/health", [&health](const request&) {
        auto report = health.evaluate();
        return make_response(
            is_serving(report.status) ? status_code::ok : status_code::service_unavailable,
            "application/json", report.body.dump());
    });
    routes.add(verb::get, "/actuator/prometheus", [&metrics](const request&) {
        return make_response(status_code::ok, prometheus_content_type, metrics.serialize());
    });
}

}  // namespace starling::http
