#include "http/quota_api.h"

#include "adapters/embedded/shared_counters.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>

namespace starling::http {
namespace {

using json = nlohmann::json;

response call(const router& routes, verb method, std::string target,
              std::optional<std::string> token = "secret") {
    request req{method, target, 11};
    if (token) {
        req.set("Authorization", "Bearer " + *token);
    }
    std::optional<response> out;
    routes.dispatch(req, [&](response res) { out = std::move(res); });
    EXPECT_TRUE(out.has_value());
    return out.value_or(response{});
}

TEST(quota_api, needs_the_admin_token) {
    router routes;
    add_quota_routes(routes, nullptr, "secret");
    EXPECT_EQ(call(routes, verb::get, "/api/quota", std::nullopt).result(),
              status_code::unauthorized);
    EXPECT_EQ(call(routes, verb::get, "/api/quota", "wrong").result(), status_code::unauthorized);
    EXPECT_EQ(call(routes, verb::post, "/api/quota/acknowledge", "wrong").result(),
              status_code::unauthorized);
}

TEST(quota_api, not_registered_without_a_token) {
    router routes;
    add_quota_routes(routes, nullptr, "");
    EXPECT_EQ(call(routes, verb::get, "/api/quota").result(), status_code::not_found);
}

TEST(quota_api, a_disabled_quota_says_so) {
    router routes;
    add_quota_routes(routes, nullptr, "secret");
    const auto res = call(routes, verb::get, "/api/quota");
    EXPECT_EQ(res.result(), status_code::ok);
    EXPECT_EQ(json::parse(res.body()), (json{{"enabled", false}}));
    EXPECT_EQ(call(routes, verb::post, "/api/quota/acknowledge").result(), status_code::conflict);
}

TEST(quota_api, shows_the_lease_and_acknowledges_the_indicator) {
    adapters::embedded::embedded_shared_counters counters(system_clock::instance());
    ratelimit::quota_options o;
    o.limits = {{3, 3600}};
    o.block_size = 2;
    auto quota = ratelimit::quota_lease::create(counters, system_clock::instance(), o);
    router routes;
    add_quota_routes(routes, quota, "secret");

    ASSERT_EQ(quota->charge(1, [](ratelimit::quota_verdict) {}),
              ratelimit::quota_verdict::admitted);
    ASSERT_EQ(quota->charge(5, [](ratelimit::quota_verdict) {}), ratelimit::quota_verdict::refused);
    auto state = json::parse(call(routes, verb::get, "/api/quota").body());
    EXPECT_EQ(state["enabled"], true);
    EXPECT_EQ(state["config"], "3:3600");
    EXPECT_EQ(state["blockSize"], 2);
    EXPECT_EQ(state["leaseReturnMs"], 1000);
    EXPECT_EQ(state["localBalance"], 2);
    EXPECT_EQ(state["reached"], true);
    EXPECT_GT(state["reachedAt"].get<std::int64_t>(), 0);
    EXPECT_EQ(state["degraded"], false);
    EXPECT_TRUE(state["degradedSince"].is_null());
    EXPECT_EQ(state["graceSeconds"], 30);

    const auto ack = call(routes, verb::post, "/api/quota/acknowledge");
    EXPECT_EQ(json::parse(ack.body()), (json{{"acknowledged", true}}));
    state = json::parse(call(routes, verb::get, "/api/quota").body());
    EXPECT_EQ(state["reached"], false);
    EXPECT_TRUE(state["reachedAt"].is_null());
    EXPECT_EQ(json::parse(call(routes, verb::post, "/api/quota/acknowledge").body()),
              (json{{"acknowledged", false}}));
}

}  // namespace
}  // namespace starling::http
