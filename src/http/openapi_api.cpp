#include "http/openapi_api.h"

#include "http/api_support.h"

#include <spdlog/spdlog.h>

namespace starling::http {

void add_openapi_routes(router& routes, const api_access& access) {
    admin_routes admin(routes, access);
    if (!admin.enabled()) {
        return;
    }
    admin.add(verb::get, "/api/openapi.json", [](const request&) {
        return make_response(status_code::ok, "application/json", std::string(openapi_document()));
    });
}

}  // namespace starling::http
