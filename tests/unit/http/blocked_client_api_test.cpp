#include "http/blocked_client_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace starling::http {
namespace {

using json = nlohmann::json;
constexpr std::int64_t now = 1'700'000'000'000;

// The API over an in-memory list; put/erase apply at once (the log is tested elsewhere), or
// fail when `log_down` is set.
class blocked_client_api_test : public ::testing::Test {
  protected:
    void SetUp() override {
        add_blocked_client_routes(
            routes_,
            blocked_client_api{.list = list_,
                               .put =
                                   [this](auth::blocked_entry e, std::function<void(status)> done) {
                                       ++writes_;
                                       if (log_down_) {
                                           done(make_error_code(std::errc::io_error));
                                           return;
                                       }
                                       done(list_.add(std::move(e)));
                                   },
                               .erase =
                                   [this](auth::block_type t, std::string v,
                                          std::function<void(result<bool>)> done) {
                                       ++writes_;
                                       done(list_.remove(t, v));
                                   },
                               .now_ms = [] { return now; },
                               .access = "t0ken"});
    }

    response call(verb method, std::string target, std::string body = {},
                  std::string token = "t0ken") {
        request req{method, target, 11};
        req.body() = std::move(body);
        if (!token.empty()) {
            req.set("Authorization", "Bearer " + token);
        }
        std::optional<response> out;
        routes_.dispatch(req, [&](response res) { out = std::move(res); });
        EXPECT_TRUE(out.has_value());
        return out.value_or(response{});
    }

    json body_of(const response& res) { return json::parse(res.body()); }

    router routes_;
    auth::blocked_clients list_;
    bool log_down_ = false;
    int writes_ = 0;
};

TEST_F(blocked_client_api_test, post_then_get_then_delete) {
    auto posted = call(verb::post, "/api/blockedClient",
                       R"({"type":"REGEX","value":"guest.*","expirationTime":0,)"
                       R"("description":"guests","regexMatchTarget":"BY_USERNAME"})");
    ASSERT_EQ(posted.result(), status_code::ok) << posted.body();
    EXPECT_EQ(body_of(posted)["regexMatchTarget"], "BY_USERNAME");
    EXPECT_EQ(list_.check("c", "guest1", "", now), "guests");

    auto got = call(verb::get, "/api/blockedClient");
    ASSERT_EQ(got.result(), status_code::ok);
    const json page = body_of(got);
    EXPECT_EQ(page["totalElements"], 1);
    EXPECT_EQ(page["hasNext"], false);
    EXPECT_EQ(page["data"][0]["value"], "guest.*");

    auto deleted = call(verb::delete_, "/api/blockedClient?type=REGEX&value=guest.%2A");
    EXPECT_EQ(deleted.result(), status_code::ok) << deleted.body();
    EXPECT_EQ(list_.size(), 0U);
    EXPECT_EQ(call(verb::delete_, "/api/blockedClient?type=REGEX&value=guest.*").result(),
              status_code::not_found);
}

TEST_F(blocked_client_api_test, post_returns_the_canonical_ip) {
    auto posted =
        call(verb::post, "/api/blockedClient", R"({"type":"IP_ADDRESS","value":"2001:DB8:0::1"})");
    ASSERT_EQ(posted.result(), status_code::ok) << posted.body();
    EXPECT_EQ(body_of(posted)["value"], "2001:db8::1");
    EXPECT_TRUE(body_of(posted)["regexMatchTarget"].is_null());
}

TEST_F(blocked_client_api_test, bad_bodies_are_400_naming_the_field_and_write_nothing) {
    const std::pair<std::string, std::string> cases[] = {
        {"not json", "body"},
        {R"({"value":"x"})", "type"},
        {R"({"type":"HOST","value":"x"})", "type: 'HOST'"},
        {R"({"type":"CLIENT_ID"})", "value"},
        {R"({"type":"CLIENT_ID","value":""})", "value"},
        {R"({"type":"CLIENT_ID","value":"x","expirationTime":-5})", "expirationTime"},
        {R"({"type":"CLIENT_ID","value":"x","description":7})", "description"},
        {R"({"type":"REGEX","value":"x","regexMatchTarget":"BY_HOST"})", "regexMatchTarget"},
        {R"({"type":"REGEX","value":"a("})", "regex 'a('"},
        {R"({"type":"IP_ADDRESS","value":"1.2.3"})", "ip_address '1.2.3'"},
    };
    for (const auto& [body, named] : cases) {
        auto res = call(verb::post, "/api/blockedClient", body);
        EXPECT_EQ(res.result(), status_code::bad_request) << body;
        const std::string message = body_of(res)["message"];
        EXPECT_NE(message.find(named), std::string::npos) << body << " → " << message;
    }
    EXPECT_EQ(writes_, 0);
}

TEST_F(blocked_client_api_test, log_failure_is_503_and_nothing_is_added) {
    log_down_ = true;
    auto res = call(verb::post, "/api/blockedClient", R"({"type":"CLIENT_ID","value":"x"})");
    EXPECT_EQ(res.result(), status_code::service_unavailable);
    EXPECT_EQ(list_.size(), 0U);
}

TEST_F(blocked_client_api_test, paging) {
    for (int i = 0; i < 5; ++i) {
        ASSERT_TRUE(list_.add({auth::block_type::client_id, "c" + std::to_string(i)}));
    }
    ASSERT_TRUE(list_.add({auth::block_type::client_id, "expired", now - 1}));
    const json page = body_of(call(verb::get, "/api/blockedClient?pageSize=2&page=2"));
    EXPECT_EQ(page["totalElements"], 5);
    EXPECT_EQ(page["totalPages"], 3);
    EXPECT_EQ(page["hasNext"], false);
    ASSERT_EQ(page["data"].size(), 1U);
    EXPECT_EQ(page["data"][0]["value"], "c4");
    EXPECT_EQ(body_of(call(verb::get, "/api/blockedClient?pageSize=2"))["hasNext"], true);
    EXPECT_EQ(call(verb::get, "/api/blockedClient?pageSize=0").result(), status_code::bad_request);
    EXPECT_EQ(call(verb::get, "/api/blockedClient?page=x").result(), status_code::bad_request);
    EXPECT_EQ(call(verb::get, "/api/blockedClient?page=%zz").result(), status_code::bad_request);
}

TEST_F(blocked_client_api_test, delete_needs_a_known_type_and_a_value) {
    EXPECT_EQ(call(verb::delete_, "/api/blockedClient?value=x").result(), status_code::bad_request);
    EXPECT_EQ(call(verb::delete_, "/api/blockedClient?type=HOST&value=x").result(),
              status_code::bad_request);
    EXPECT_EQ(call(verb::delete_, "/api/blockedClient?type=CLIENT_ID").result(),
              status_code::bad_request);
    EXPECT_EQ(writes_, 0);
}

TEST_F(blocked_client_api_test, every_route_needs_the_admin_token) {
    for (const auto& token : {std::string(), std::string("wrong")}) {
        EXPECT_EQ(call(verb::get, "/api/blockedClient", {}, token).result(),
                  status_code::unauthorized);
        EXPECT_EQ(call(verb::post, "/api/blockedClient",
                       R"({"type":"CLIENT_ID","value":"x","expirationTime":0})", token)
                      .result(),
                  status_code::unauthorized);
        EXPECT_EQ(
            call(verb::delete_, "/api/blockedClient?type=CLIENT_ID&value=x", {}, token).result(),
            status_code::unauthorized);
    }
    EXPECT_EQ(writes_, 0);
    EXPECT_TRUE(list_.list(now).empty());
}

TEST(blocked_client_api, without_an_admin_token_no_route_exists) {
    router routes;
    auth::blocked_clients list;
    add_blocked_client_routes(routes, blocked_client_api{.list = list, .access = ""});
    request req{verb::get, "/api/blockedClient", 11};
    std::optional<response> out;
    routes.dispatch(req, [&](response res) { out = std::move(res); });
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->result(), status_code::not_found);
}

}  // namespace
}  // namespace starling::http
