#include "http/log_level_api.h"

#include "base/log.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>

namespace starling::http {
namespace {

using json = nlohmann::json;

response call(const router& routes, verb method, std::optional<std::string> body = std::nullopt,
              std::optional<std::string> token = "secret") {
    request req{method, "/api/app/log-level", 11};
    if (token) {
        req.set("X-Authorization", "Bearer " + *token);
    }
    if (body) {
        req.body() = *body;
        req.prepare_payload();
    }
    std::optional<response> out;
    routes.dispatch(req, [&](response res) { out = std::move(res); });
    EXPECT_TRUE(out.has_value());
    return out.value_or(response{});
}

// Restores the process-wide level the test binary runs at, whatever a test set.
class log_level_api : public ::testing::Test {
  protected:
    void SetUp() override { saved_ = base::log_level(); }
    void TearDown() override { base::set_log_level(saved_); }

  private:
    std::string saved_;
};

TEST_F(log_level_api, needs_the_admin_token) {
    router routes;
    add_log_level_routes(routes, "secret");
    EXPECT_EQ(call(routes, verb::get, std::nullopt, std::nullopt).result(),
              status_code::unauthorized);
    EXPECT_EQ(call(routes, verb::put, R"({"level":"debug"})", "wrong").result(),
              status_code::unauthorized);
    EXPECT_NE(base::log_level(), "debug") << "a refused call changed the level";
}

TEST_F(log_level_api, not_registered_without_a_token) {
    router routes;
    add_log_level_routes(routes, "");
    EXPECT_EQ(call(routes, verb::get).result(), status_code::not_found);
}

TEST_F(log_level_api, put_changes_the_level_and_get_reads_it_back) {
    ASSERT_TRUE(base::set_log_level("info"));
    router routes;
    add_log_level_routes(routes, "secret");

    auto res = call(routes, verb::get);
    ASSERT_EQ(res.result(), status_code::ok);
    auto got = json::parse(res.body());
    EXPECT_EQ(got["level"], "info");
    EXPECT_EQ(got["levels"], (json{"trace", "debug", "info", "warn", "error", "critical", "off"}));

    for (const std::string level : {"debug", "warn", "error", "trace", "off", "info"}) {
        const std::string before = base::log_level();
        res = call(routes, verb::put, json{{"level", level}}.dump());
        ASSERT_EQ(res.result(), status_code::ok) << level << ": " << res.body();
        EXPECT_EQ(json::parse(res.body()), (json{{"level", level}, {"previous", before}}));
        EXPECT_EQ(json::parse(call(routes, verb::get).body())["level"], level);
        EXPECT_EQ(spdlog::get_level(), spdlog::level::from_str(level));
    }
}

TEST_F(log_level_api, a_bad_body_is_a_400_naming_the_member_and_changes_nothing) {
    ASSERT_TRUE(base::set_log_level("warn"));
    router routes;
    add_log_level_routes(routes, "secret");
    for (const std::string body :
         {R"({"level":"loud"})", R"({"level":3})", R"({})", R"(["debug"])", "not json", ""}) {
        const auto res = call(routes, verb::put, body);
        EXPECT_EQ(res.result(), status_code::bad_request) << body;
        EXPECT_EQ(base::log_level(), "warn") << body;
    }
    const auto res = call(routes, verb::put, R"({"level":"loud"})");
    EXPECT_NE(res.body().find("level"), std::string::npos) << res.body();
}

}  // namespace
}  // namespace starling::http
