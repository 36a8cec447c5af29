#include "http/quota_api.h"

#include "http/api_support.h"
#include "ratelimit/bandwidth_spec.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace starling::http {
namespace {

using json = nlohmann::json;

json time_or_null(std::int64_t ms) { return ms == 0 ? json(nullptr) : json(ms); }

json describe(ratelimit::quota_lease* quota) {
    if (quota == nullptr) {
        return json{{"enabled", false}};
    }
    const auto s = quota->state();
    return json{{"enabled", true},
                {"config", ratelimit::to_string(quota->options().limits)},
                {"blockSize", quota->block_size()},
                {"leaseReturnMs", quota->options().lease_return.count()},
                {"localBalance", s.balance},
                {"reached", s.reached},
                {"reachedAt", time_or_null(s.reached_at_ms)},
                {"degraded", s.degraded},
                {"degradedSince", time_or_null(s.degraded_since_ms)},
                {"graceSeconds", ratelimit::quota_lease::store_grace.count()}};
}

}  // namespace

void add_quota_routes(router& routes, std::shared_ptr<ratelimit::quota_lease> quota,
                      std::string admin_token) {
    if (admin_token.empty()) {
        spdlog::info("quota REST API disabled (security.admin-token is empty)");
        return;
    }
    auto token = std::make_shared<const std::string>(std::move(admin_token));
    routes.add(verb::get, "/api/quota", [quota, token](const request& req) {
        if (!bearer_authorized(req, *token)) {
            return error_response(status_code::unauthorized, "missing or wrong bearer token");
        }
        return make_response(status_code::ok, "application/json", describe(quota.get()).dump());
    });
    routes.add(verb::post, "/api/quota/acknowledge", [quota, token](const request& req) {
        if (!bearer_authorized(req, *token)) {
            return error_response(status_code::unauthorized, "missing or wrong bearer token");
        }
        if (quota == nullptr) {
            return error_response(status_code::conflict,
                                  "the throughput quota is disabled (mqtt.rate-limits.total)");
        }
        const bool was_raised = quota->acknowledge();
        return make_response(status_code::ok, "application/json",
                             json{{"acknowledged", was_raised}}.dump());
    });
}

}  // namespace starling::http
