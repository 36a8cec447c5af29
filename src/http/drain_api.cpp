#include "http/drain_api.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <memory>
#include <utility>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view path = "/api/app/drain";
constexpr double max_rate = 1'000'000;

json to_json(const drain_progress_view& p) {
    return {{"state", p.state},
            {"startedAt", p.started_at_ms},
            {"drainedAt", p.drained_at_ms},
            {"disconnected", p.disconnected},
            {"remaining", p.remaining},
            {"rate", p.rate},
            {"serverReference", p.server_reference}};
}

// The request in the body (empty: the configured settings), or the 400 naming the member.
std::variant<drain_request, response> request_of(const request& req) {
    drain_request out;
    if (req.body().empty()) {
        return out;
    }
    const json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
    if (!body.is_object()) {
        return error_response(status_code::bad_request, "body: expected a JSON object");
    }
    if (const auto rate = body.find("rate"); rate != body.end()) {
        if (!rate->is_number() || rate->get<double>() <= 0 || rate->get<double>() > max_rate) {
            return error_response(status_code::bad_request,
                                  "rate: connections per second, a number in (0, 1000000]");
        }
        out.rate = rate->get<double>();
    }
    if (const auto ref = body.find("serverReference"); ref != body.end()) {
        if (!ref->is_string() || ref->get_ref<const std::string&>().size() > 65535) {
            return error_response(status_code::bad_request,
                                  "serverReference: a string of at most 65535 bytes");
        }
        out.server_reference = ref->get<std::string>();
    }
    return out;
}

}  // namespace

void add_drain_routes(router& routes, drain_api api) {
    admin_routes admin(routes, api.access);
    if (!admin.enabled()) {
        spdlog::info("drain REST API disabled (no admin token and admin login off)");
        return;
    }
    auto shared = std::make_shared<const drain_api>(std::move(api));
    admin.add(verb::get, std::string(path),
              [shared](const request&) { return json_response(to_json(shared->progress())); });
    admin.add(verb::post, std::string(path), [shared](const request& req) {
        auto parsed = request_of(req);
        if (auto* refused = std::get_if<response>(&parsed)) {
            return std::move(*refused);
        }
        const auto outcome = shared->start(std::get<drain_request>(parsed));
        if (outcome == drain_start::not_serving) {
            return error_response(status_code::service_unavailable,
                                  "the node is not serving (starting or stopping)");
        }
        const bool started = outcome == drain_start::started;
        if (started) {
            spdlog::warn("drain requested through {}", path);
        }
        auto res = json_response(to_json(shared->progress()));
        if (started) {
            res.result(status_code::accepted);
        }
        return res;
    });
}

}  // namespace starling::http
