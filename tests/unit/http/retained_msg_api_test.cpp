#include "http/retained_msg_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace starling::http {
namespace {

using json = nlohmann::json;

// The retained store's part, as the daemon wires it: a map of topic → message, a filter that
// is either "#" or an exact topic (the trie's matching is tested with the trie), and deletes
// that apply at once.
struct fake_store {
    std::map<std::string, retained_view> messages;
    int erase_calls = 0;
    bool erase_fails = false;

    retained_msg_api api(std::string token = "secret") {
        return retained_msg_api{
            .list = [this](const std::string& filter) -> std::optional<std::vector<retained_view>> {
                if (filter.find("##") != std::string::npos) {
                    return std::nullopt;  // stands for an invalid filter
                }
                std::vector<retained_view> out;
                for (const auto& [topic, m] : messages) {
                    if (filter == "#" || filter == topic) {
                        out.push_back(m);
                    }
                }
                return out;
            },
            .find = [this](const std::string& topic) -> std::optional<retained_view> {
                auto it = messages.find(topic);
                return it == messages.end() ? std::nullopt : std::optional(it->second);
            },
            .erase =
                [this](std::string topic, std::function<void(result<bool>)> done) {
                    ++erase_calls;
                    if (erase_fails) {
                        done(result<bool>(boost::system::in_place_error,
                                          std::make_error_code(std::errc::io_error)));
                        return;
                    }
                    done(messages.erase(topic) > 0);
                },
            .access = std::move(token)};
    }
};

class retained_msg_api_test : public ::testing::Test {
  protected:
    retained_msg_api_test() {
        store_.messages["a/1"] = {
            .topic = "a/1", .payload = "one", .qos = 1, .created_time_ms = 300};
        store_.messages["a/2"] = {.topic = "a/2",
                                  .payload = "two",
                                  .qos = 0,
                                  .created_time_ms = 100,
                                  .user_properties = {{"unit", "C"}, {"unit", "K"}}};
        store_.messages["B/3"] = {.topic = "B/3",
                                  .payload = std::string("\xff\xfe", 2),
                                  .qos = 2,
                                  .created_time_ms = 200};
        add_retained_msg_routes(routes_, store_.api());
    }

    response call(verb method, const std::string& target,
                  std::optional<std::string> token = "secret") {
        request req{method, target, 11};
        if (token) {
            req.set("X-Authorization", "Bearer " + *token);
        }
        std::optional<response> out;
        routes_.dispatch(req, [&](response res) { out = std::move(res); });
        EXPECT_TRUE(out) << target;
        return out.value_or(response{});
    }

    json ok(verb method, const std::string& target) {
        auto res = call(method, target);
        EXPECT_EQ(res.result(), status_code::ok) << target << ": " << res.body();
        return json::parse(res.body(), nullptr, false);
    }

    std::vector<std::string> topics(const std::string& query) {
        std::vector<std::string> out;
        const json page = ok(verb::get, "/api/retained-msg?" + query);
        for (const auto& m : page["data"]) {
            out.push_back(m["topic"]);
        }
        return out;
    }

    fake_store store_;
    router routes_;
};

TEST_F(retained_msg_api_test, every_route_needs_the_admin_token) {
    for (const auto* target : {"/api/retained-msg", "/api/retained-msg?topicName=a/1"}) {
        EXPECT_EQ(call(verb::get, target, std::nullopt).result(), status_code::unauthorized);
        EXPECT_EQ(call(verb::get, target, "wrong").result(), status_code::unauthorized);
    }
    EXPECT_EQ(call(verb::delete_, "/api/retained-msg?topicName=a/1", "wrong").result(),
              status_code::unauthorized);
    EXPECT_EQ(store_.erase_calls, 0);
    router none;
    add_retained_msg_routes(none, store_.api(""));
    std::optional<response> out;
    none.dispatch(request{verb::get, "/api/retained-msg", 11},
                  [&](response res) { out = std::move(res); });
    ASSERT_TRUE(out);
    EXPECT_EQ(out->result(), status_code::not_found);
}

TEST_F(retained_msg_api_test, one_message_in_tbmq_shape) {
    EXPECT_EQ(ok(verb::get, "/api/retained-msg?topicName=a%2F2"),
              (json{{"topic", "a/2"},
                    {"payload", "two"},
                    {"qos", 0},
                    {"createdTime", 100},
                    {"userProperties",
                     {{"props", {{{"k", "unit"}, {"v", "C"}}, {{"k", "unit"}, {"v", "K"}}}}}}}));
    EXPECT_EQ(ok(verb::get, "/api/retained-msg?topicName=a/1")["userProperties"], nullptr);
    EXPECT_EQ(ok(verb::get, "/api/retained-msg?topicName=B/3")["payload"],
              "\xef\xbf\xbd\xef\xbf\xbd")
        << "bytes that are not UTF-8 are written as U+FFFD";
    EXPECT_EQ(call(verb::get, "/api/retained-msg?topicName=a/9").result(), status_code::not_found);
}

TEST_F(retained_msg_api_test, pages_sorts_and_filters) {
    EXPECT_EQ(topics(""), (std::vector<std::string>{"B/3", "a/1", "a/2"})) << "topic, bytewise";
    EXPECT_EQ(topics("sortOrder=DESC"), (std::vector<std::string>{"a/2", "a/1", "B/3"}));
    EXPECT_EQ(topics("sortProperty=createdTime"), (std::vector<std::string>{"a/2", "B/3", "a/1"}));
    EXPECT_EQ(topics("sortProperty=qos&sortOrder=DESC"),
              (std::vector<std::string>{"B/3", "a/1", "a/2"}));
    EXPECT_EQ(topics("textSearch=A%2F"), (std::vector<std::string>{"a/1", "a/2"}))
        << "case-insensitive substring";
    EXPECT_EQ(topics("topicFilter=a%2F1"), (std::vector<std::string>{"a/1"}));

    auto first = ok(verb::get, "/api/retained-msg?pageSize=2&page=0");
    EXPECT_EQ(first["totalElements"], 3);
    EXPECT_EQ(first["totalPages"], 2);
    EXPECT_EQ(first["hasNext"], true);
    EXPECT_EQ(topics("pageSize=2&page=1"), (std::vector<std::string>{"a/2"}));
    EXPECT_EQ(topics("pageSize=2&page=5"), (std::vector<std::string>{}));
}

TEST_F(retained_msg_api_test, delete_removes_once) {
    EXPECT_EQ(ok(verb::delete_, "/api/retained-msg?topicName=a/1"), json::object());
    EXPECT_EQ(call(verb::delete_, "/api/retained-msg?topicName=a/1").result(),
              status_code::not_found);
    EXPECT_EQ(topics(""), (std::vector<std::string>{"B/3", "a/2"}));
    store_.erase_fails = true;
    EXPECT_EQ(call(verb::delete_, "/api/retained-msg?topicName=a/2").result(),
              status_code::service_unavailable);
}

TEST_F(retained_msg_api_test, bad_input_is_a_400_naming_the_parameter) {
    const std::pair<verb, std::pair<std::string, std::string>> cases[] = {
        {verb::get, {"/api/retained-msg?pageSize=0", "pageSize"}},
        {verb::get, {"/api/retained-msg?page=x", "page"}},
        {verb::get, {"/api/retained-msg?sortProperty=payload", "sortProperty"}},
        {verb::get, {"/api/retained-msg?sortOrder=up", "sortOrder"}},
        {verb::get, {"/api/retained-msg?topicFilter=%23%23", "topicFilter"}},
        {verb::get, {"/api/retained-msg?topicName=%g0", "query"}},
        {verb::delete_, {"/api/retained-msg", "topicName"}},
        {verb::delete_, {"/api/retained-msg?topicName=", "topicName"}},
    };
    for (const auto& [method, c] : cases) {
        const auto& [target, name] = c;
        auto res = call(method, target);
        EXPECT_EQ(res.result(), status_code::bad_request) << target;
        auto body = json::parse(res.body(), nullptr, false);
        ASSERT_TRUE(body.is_object()) << target;
        EXPECT_TRUE(body["message"].get<std::string>().starts_with(name + ":"))
            << target << ": " << body["message"];
    }
    EXPECT_EQ(store_.erase_calls, 0);
}

}  // namespace
}  // namespace starling::http
