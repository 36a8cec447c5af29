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
                      api_access access) {
    admin_routes admin(routes, std::move(access));
    admin.add(verb::get, "/api/quota", [quota](const request&) {
        return make_response(status_code::ok, "application/json", describe(quota.get()).dump());
    });
    admin.add(verb::post, "/api/quota/acknowledge", [quota](const request&) {
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
