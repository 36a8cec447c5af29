// /api/unauthorized/client against the real SQLite metadata store (the PostgreSQL adapter runs
// the same queries through the metadata-store contract suite).

#include "http/unauthorized_client_api.h"

#include "adapters/embedded/sqlite_metadata_store.h"
#include "starling/clock.h"

#include "support/temp_dir.h"
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <future>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace starling::http {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

class unauthorized_client_api : public ::testing::Test {
  protected:
    unauthorized_client_api() {
        adapters::embedded::sqlite_metadata_store::options opts;
        opts.data_dir = dir_.path();
        opts.unauthorized.rows_per_address = 0;  // the tests write many rows from one address
        opts.unauthorized.rows_per_second = 0;
        store_ = std::move(
            adapters::embedded::sqlite_metadata_store::open(opts, system_clock::instance())
                .value());
        add_unauthorized_client_routes(routes_, *store_, "secret");
    }
    ~unauthorized_client_api() override { store_->stop(); }

    // A refused CONNECT, `age` before now (rows are listed newest first).
    void record(std::string client_id, std::chrono::milliseconds age = 0ms) {
        std::promise<status> written;
        store_->record_unauthorized(
            unauthorized_client{.client_id = std::move(client_id),
                                .ip_address = "10.0.0.7",
                                .ts_ms = system_clock::instance().epoch_ms() - age.count(),
                                .username = "user-x",
                                .password_provided = true,
                                .tls_used = false,
                                .reason = "wrong password"},
            [&](status st) { written.set_value(st); });
        ASSERT_TRUE(written.get_future().get());
    }

    response call(verb method, std::string target, std::optional<std::string> token = "secret") {
        request req{method, target, 11};
        if (token) {
            req.set("Authorization", "Bearer " + *token);
        }
        std::promise<response> answer;
        auto got = answer.get_future();
        routes_.dispatch(req, [&](response res) { answer.set_value(std::move(res)); });
        EXPECT_EQ(got.wait_for(10s), std::future_status::ready) << target;
        return got.get();
    }

    json call_json(verb method, std::string target) {
        auto res = call(method, target);
        EXPECT_EQ(res.result(), status_code::ok) << target << ": " << res.body();
        return json::parse(res.body(), nullptr, false);
    }

    starling::testing::temp_dir dir_;
    std::unique_ptr<adapters::embedded::sqlite_metadata_store> store_;
    router routes_;
};

TEST_F(unauthorized_client_api, every_route_needs_the_admin_token) {
    record("dev-1");
    for (const auto& [method, target] : {std::pair{verb::get, "/api/unauthorized/client"},
                                         std::pair{verb::get, "/api/unauthorized/client/dev-1"},
                                         std::pair{verb::delete_, "/api/unauthorized/client/dev-1"},
                                         std::pair{verb::delete_, "/api/unauthorized/client"}}) {
        EXPECT_EQ(call(method, target, std::nullopt).result(), status_code::unauthorized) << target;
        EXPECT_EQ(call(method, target, "wrong").result(), status_code::unauthorized) << target;
    }
    EXPECT_EQ(call_json(verb::get, "/api/unauthorized/client")["totalElements"], 1)
        << "a refused DELETE removed a row";
}

TEST_F(unauthorized_client_api, not_registered_without_a_token) {
    router routes;
    add_unauthorized_client_routes(routes, *store_, "");
    request req{verb::get, "/api/unauthorized/client", 11};
    std::optional<response> out;
    routes.dispatch(req, [&](response res) { out = std::move(res); });
    ASSERT_TRUE(out);
    EXPECT_EQ(out->result(), status_code::not_found);
}

TEST_F(unauthorized_client_api, lists_newest_first_in_pages) {
    for (int i = 0; i < 25; ++i) {
        record("dev-" + std::to_string(i), std::chrono::milliseconds(1000 * (25 - i)));
    }
    std::vector<std::string> seen;
    for (int page = 0; page < 3; ++page) {
        auto got = call_json(verb::get,
                             "/api/unauthorized/client?pageSize=10&page=" + std::to_string(page));
        EXPECT_EQ(got["totalElements"], 25);
        EXPECT_EQ(got["totalPages"], 3);
        EXPECT_EQ(got["hasNext"], page < 2);
        EXPECT_EQ(got["data"].size(), page < 2 ? 10U : 5U);
        for (const auto& row : got["data"]) {
            seen.push_back(row["clientId"]);
        }
    }
    ASSERT_EQ(seen.size(), 25U);
    for (int i = 0; i < 25; ++i) {
        EXPECT_EQ(seen[static_cast<std::size_t>(i)], "dev-" + std::to_string(24 - i));
    }
    auto row = call_json(verb::get, "/api/unauthorized/client?pageSize=1")["data"][0];
    EXPECT_EQ(row, (json{{"clientId", "dev-24"},
                         {"ipAddress", "10.0.0.7"},
                         {"ts", row["ts"]},
                         {"username", "user-x"},
                         {"passwordProvided", true},
                         {"tlsUsed", false},
                         {"reason", "wrong password"}}));
    auto beyond = call_json(verb::get, "/api/unauthorized/client?pageSize=10&page=7");
    EXPECT_TRUE(beyond["data"].empty());
    EXPECT_EQ(beyond["totalElements"], 25);
    EXPECT_EQ(beyond["hasNext"], false);
}

TEST_F(unauthorized_client_api, text_search_is_a_case_insensitive_literal_substring) {
    for (const auto* id : {"dev-1", "dev-10", "DEV-11", "gw-1", "50%_off", "500-off"}) {
        record(id);
    }
    auto ids = [&](const std::string& search) {
        std::set<std::string> out;
        auto got = call_json(verb::get, "/api/unauthorized/client?textSearch=" + search);
        for (const auto& row : got["data"]) {
            out.insert(row["clientId"].get<std::string>());
        }
        EXPECT_EQ(got["totalElements"], out.size()) << search;
        return out;
    };
    EXPECT_EQ(ids("dev-1"), (std::set<std::string>{"dev-1", "dev-10", "DEV-11"}));
    EXPECT_EQ(ids("Dev-11"), (std::set<std::string>{"DEV-11"}));
    // '%' and '_' are text, not LIKE wildcards: "0%25_" is "0%_" once decoded.
    EXPECT_EQ(ids("0%25_"), (std::set<std::string>{"50%_off"}));
    EXPECT_EQ(ids("_"), (std::set<std::string>{"50%_off"}));
    EXPECT_EQ(ids("nobody"), (std::set<std::string>{}));
    EXPECT_EQ(ids("").size(), 6U);
}

TEST_F(unauthorized_client_api, get_and_delete_one_by_its_encoded_id) {
    record("plant/7+a b");
    record("dev-2");
    const std::string encoded = "/api/unauthorized/client/plant%2F7+a%20b";
    auto got = call_json(verb::get, encoded);
    EXPECT_EQ(got["clientId"], "plant/7+a b");
    EXPECT_EQ(got["reason"], "wrong password");
    EXPECT_EQ(call(verb::get, "/api/unauthorized/client/plant%2F7%20a%20b").result(),
              status_code::not_found)
        << "'+' in a path is itself, not a space";

    EXPECT_EQ(call_json(verb::delete_, encoded), json::object());
    EXPECT_EQ(call(verb::delete_, encoded).result(), status_code::not_found);
    EXPECT_EQ(call(verb::get, encoded).result(), status_code::not_found);
    auto left = call_json(verb::get, "/api/unauthorized/client");
    ASSERT_EQ(left["totalElements"], 1);
    EXPECT_EQ(left["data"][0]["clientId"], "dev-2");
}

TEST_F(unauthorized_client_api, a_long_id_is_found_by_its_stored_prefix) {
    const std::string long_id(70 * 1024, 'x');
    record(long_id);
    const std::string stored(unauthorized_max_id_bytes, 'x');
    EXPECT_EQ(call_json(verb::get, "/api/unauthorized/client/" + stored)["clientId"], stored);
}

TEST_F(unauthorized_client_api, delete_all_reports_how_many) {
    for (int i = 0; i < 7; ++i) {
        record("dev-" + std::to_string(i));
    }
    EXPECT_EQ(call_json(verb::delete_, "/api/unauthorized/client"), (json{{"deleted", 7}}));
    EXPECT_EQ(call_json(verb::get, "/api/unauthorized/client")["totalElements"], 0);
    EXPECT_EQ(call_json(verb::delete_, "/api/unauthorized/client"), (json{{"deleted", 0}}));
}

TEST_F(unauthorized_client_api, bad_input_is_a_400_naming_the_parameter) {
    const std::pair<std::string, std::string> cases[] = {
        {"/api/unauthorized/client?pageSize=0", "pageSize"},
        {"/api/unauthorized/client?pageSize=1001", "pageSize"},
        {"/api/unauthorized/client?pageSize=ten", "pageSize"},
        {"/api/unauthorized/client?page=-1", "page"},
        {"/api/unauthorized/client?page=99999999999999999999", "page"},
        {"/api/unauthorized/client?textSearch=%zz", "query"},
        {"/api/unauthorized/client/%zz", "clientId"},
        {"/api/unauthorized/client/", "clientId"},
    };
    for (const auto& [target, names] : cases) {
        auto res = call(verb::get, target);
        EXPECT_EQ(res.result(), status_code::bad_request) << target;
        auto body = json::parse(res.body(), nullptr, false);
        ASSERT_TRUE(body.is_object()) << target;
        EXPECT_EQ(body["status"], 400);
        EXPECT_TRUE(body["message"].get<std::string>().starts_with(names + ":"))
            << target << ": " << body["message"];
    }
}

TEST_F(unauthorized_client_api, a_failed_store_is_a_503_not_a_500) {
    record("dev-1");
    store_->stop();
    for (const auto& [method, target] : {std::pair{verb::get, "/api/unauthorized/client"},
                                         std::pair{verb::get, "/api/unauthorized/client/dev-1"},
                                         std::pair{verb::delete_, "/api/unauthorized/client/dev-1"},
                                         std::pair{verb::delete_, "/api/unauthorized/client"}}) {
        EXPECT_EQ(call(method, target).result(), status_code::service_unavailable) << target;
    }
}

}  // namespace
}  // namespace starling::http
