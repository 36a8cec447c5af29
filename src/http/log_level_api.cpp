#include "http/log_level_api.h"

#include "base/log.h"
#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/app/log-level";

json level_names() {
    json names = json::array();
    for (const auto& name : base::log_level_names()) {
        names.push_back(name);
    }
    return names;
}

}  // namespace

void add_log_level_routes(router& routes, api_access access) {
    admin_routes admin(routes, std::move(access));
    if (!admin.enabled()) {
        spdlog::info("log-level REST API disabled (no admin token and admin login off)");
        return;
    }
    admin.add(verb::get, std::string(path), [](const request&) {
        return json_response({{"level", base::log_level()}, {"levels", level_names()}});
    });
    admin.add(verb::put, std::string(path), [](const request& req) {
        const json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
        if (!body.is_object()) {
            return error_response(status_code::bad_request, "body: expected a JSON object");
        }
        const auto level = body.find("level");
        if (level == body.end() || !level->is_string()) {
            return error_response(status_code::bad_request,
                                  "level: required, one of " + level_names().dump());
        }
        const std::string previous = base::log_level();
        const auto wanted = level->get<std::string>();
        if (!base::set_log_level(wanted)) {
            return error_response(status_code::bad_request,
                                  "level: unknown level, expected one of " + level_names().dump());
        }
        spdlog::warn("log level changed from {} to {} through {}", previous, base::log_level(),
                     path);
        return json_response({{"level", base::log_level()}, {"previous", previous}});
    });
}

}  // namespace starling::http
