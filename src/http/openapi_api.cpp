#include "http/openapi_api.h"

#include "http/api_support.h"

#include <spdlog/spdlog.h>

namespace starling::http {

void add_openapi_routes(router& routes, const std::string& admin_token) {
    admin_routes admin(routes, admin_token);
    if (!admin.enabled()) {
        return;
    }
    admin.add(verb::get, "/api/openapi.json", [](const request&) {
        return make_response(status_code::ok, "application/json", std::string(openapi_document()));
    });
}

}  // namespace starling::http
