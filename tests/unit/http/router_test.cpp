#include "http/router.h"

#include <boost/beast/http/field.hpp>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>

namespace starling::http {
namespace {

using boost::beast::http::field;

request make_request(verb method, std::string target) {
    request req{method, target, 11};
    return req;
}

// Dispatches and returns the response the router produced synchronously.
response run(const router& routes, verb method, std::string target) {
    std::optional<response> out;
    routes.dispatch(make_request(method, std::move(target)),
                    [&](response res) { out = std::move(res); });
    EXPECT_TRUE(out.has_value());
    return out.value_or(response{});
}

response text(std::string body) { return make_response(status_code::ok, "text/plain", body); }

TEST(http_router, exact_path_and_method) {
    router routes;
    routes.add(verb::get, "/a", [](const request&) { return text("get a"); });
    routes.add(verb::post, "/a", [](const request&) { return text("post a"); });
    EXPECT_EQ(run(routes, verb::get, "/a").body(), "get a");
    EXPECT_EQ(run(routes, verb::post, "/a").body(), "post a");
}

TEST(http_router, query_string_is_not_part_of_the_path) {
    router routes;
    routes.add(verb::get, "/a", [](const request& req) { return text(std::string(req.target())); });
    EXPECT_EQ(run(routes, verb::get, "/a?x=1").body(), "/a?x=1");
}

TEST(http_router, unknown_path_is_404_with_a_json_body) {
    router routes;
    routes.add(verb::get, "/a", [](const request&) { return text("a"); });
    const auto res = run(routes, verb::get, "/b");
    EXPECT_EQ(res.result(), status_code::not_found);
    EXPECT_EQ(res[field::content_type], "application/json");
    EXPECT_EQ(nlohmann::json::parse(res.body())["status"], 404);
}

TEST(http_router, wrong_method_is_405_listing_the_allowed_ones) {
    router routes;
    routes.add(verb::get, "/a", [](const request&) { return text("a"); });
    routes.add(verb::put, "/a", [](const request&) { return text("a"); });
    const auto res = run(routes, verb::delete_, "/a");
    EXPECT_EQ(res.result(), status_code::method_not_allowed);
    EXPECT_EQ(res[field::allow], "GET, PUT");
}

TEST(http_router, prefix_routes_and_precedence) {
    router routes;
    routes.add(verb::get, "/api/*", [](const request&) { return text("api"); });
    routes.add(verb::get, "/api/users/*", [](const request&) { return text("users"); });
    routes.add(verb::get, "/api/users/me", [](const request&) { return text("me"); });
    EXPECT_EQ(run(routes, verb::get, "/api/other").body(), "api");
    EXPECT_EQ(run(routes, verb::get, "/api/users/7").body(), "users");
    EXPECT_EQ(run(routes, verb::get, "/api/users/me").body(), "me");
    EXPECT_EQ(run(routes, verb::get, "/apix").result(), status_code::not_found);
    EXPECT_EQ(run(routes, verb::get, "/api").result(), status_code::not_found);
}

TEST(http_router, async_handler_may_answer_later) {
    router routes;
    std::optional<responder> pending;
    routes.add_async(verb::get, "/slow",
                     [&](const request&, responder respond) { pending = std::move(respond); });
    std::optional<response> out;
    routes.dispatch(make_request(verb::get, "/slow"), [&](response res) { out = std::move(res); });
    EXPECT_FALSE(out.has_value());
    ASSERT_TRUE(pending.has_value());
    (*pending)(text("done"));
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->body(), "done");
}

TEST(http_router, throwing_handler_is_500_without_internals) {
    router routes;
    routes.add(verb::get, "/boom",
               [](const request&) -> response { throw std::runtime_error("secret detail"); });
    const auto res = run(routes, verb::get, "/boom");
    EXPECT_EQ(res.result(), status_code::internal_server_error);
    EXPECT_EQ(res.body().find("secret"), std::string::npos);
}

}  // namespace
}  // namespace starling::http
