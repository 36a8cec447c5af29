// /api/timeseries: parameter checks and the shaping of the answer (the nodes combined for
// `total`, buckets, order, limit). The route against the real daemon: tests/integration/
// test_timeseries_api.py.

#include "http/timeseries_api.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace starling::http {
namespace {

using json = nlohmann::json;

timeseries_request parsed(std::string entity, query_params params) {
    auto r = timeseries_request_of(std::move(entity), params);
    EXPECT_TRUE(std::holds_alternative<timeseries_request>(r)) << std::get<response>(r).body();
    return std::holds_alternative<timeseries_request>(r) ? std::get<timeseries_request>(r)
                                                         : timeseries_request{};
}

std::string refusal(query_params params) {
    auto r = timeseries_request_of("n1", params);
    if (!std::holds_alternative<response>(r)) {
        ADD_FAILURE() << "accepted";
        return {};
    }
    EXPECT_EQ(std::get<response>(r).result(), status_code::bad_request);
    return std::get<response>(r).body();
}

TEST(timeseries_request, defaults_and_parsed_values) {
    auto r = parsed(
        "total", {{"keys", "sessions,incomingMsgs,sessions"}, {"startTs", "10"}, {"endTs", "20"}});
    EXPECT_EQ(r.entity_id, "total");
    EXPECT_EQ(r.keys, (std::vector<std::string>{"sessions", "incomingMsgs"}));  // deduplicated
    EXPECT_EQ(r.start_ms, 10);
    EXPECT_EQ(r.end_ms, 20);
    EXPECT_EQ(r.agg, stats_aggregation::none);
    EXPECT_TRUE(r.descending);
    EXPECT_EQ(r.limit, 10080U);

    r = parsed("n1", {{"keys", "droppedMsgs"},
                      {"startTs", "0"},
                      {"endTs", "0"},
                      {"agg", "AVG"},
                      {"interval", "60000"},
                      {"orderBy", "ASC"},
                      {"limit", "5"}});
    EXPECT_EQ(r.agg, stats_aggregation::avg);
    EXPECT_EQ(r.interval_ms, 60000);
    EXPECT_FALSE(r.descending);
    EXPECT_EQ(r.limit, 5U);
}

TEST(timeseries_request, every_bad_parameter_is_named) {
    const query_params ok{{"keys", "sessions"}, {"startTs", "0"}, {"endTs", "100"}};
    auto with = [&](std::string name, std::string value) {
        auto p = ok;
        p[name] = std::move(value);
        return p;
    };
    auto without = [&](const std::string& name) {
        auto p = ok;
        p.erase(name);
        return p;
    };
    EXPECT_NE(refusal(without("keys")).find("keys"), std::string::npos);
    EXPECT_NE(refusal(with("keys", "sessions,cpuUsage")).find("cpuUsage"), std::string::npos);
    EXPECT_NE(refusal(with("keys", "sessions,")).find("keys"), std::string::npos);
    EXPECT_NE(refusal(without("startTs")).find("startTs"), std::string::npos);
    EXPECT_NE(refusal(with("endTs", "1e3")).find("endTs"), std::string::npos);
    EXPECT_NE(refusal(with("endTs", "99999999999999999999")).find("endTs"), std::string::npos);
    EXPECT_NE(refusal(with("startTs", "-1")).find("startTs"), std::string::npos);
    EXPECT_NE(refusal(with("startTs", "101")).find("endTs"), std::string::npos);
    EXPECT_NE(refusal(with("agg", "MEDIAN")).find("agg"), std::string::npos);
    EXPECT_NE(refusal(with("agg", "SUM")).find("interval"), std::string::npos);
    auto tiny = with("agg", "SUM");
    tiny["interval"] = "0";
    EXPECT_NE(refusal(tiny).find("interval"), std::string::npos);
    auto too_many = with("agg", "SUM");
    too_many["endTs"] = "100000000";
    too_many["interval"] = "1";
    EXPECT_NE(refusal(too_many).find("buckets"), std::string::npos);
    EXPECT_NE(refusal(with("orderBy", "asc")).find("orderBy"), std::string::npos);
    EXPECT_NE(refusal(with("limit", "0")).find("limit"), std::string::npos);
    EXPECT_NE(refusal(with("limit", "100001")).find("limit"), std::string::npos);
}

std::vector<stats_point> two_nodes() {
    // read_stats order: key (stats_keys order), ts, entity.
    return {
        {"n1", "incomingMsgs", 0, 10},     {"n2", "incomingMsgs", 0, 5},
        {"n1", "incomingMsgs", 60000, 20}, {"n2", "incomingMsgs", 120000, 7},
        {"n1", "subscriptions", 0, 40},    {"n2", "subscriptions", 0, 42},
    };
}

TEST(timeseries_body, total_sums_shares_and_takes_the_largest_mirrored_value) {
    auto req = parsed("total", {{"keys", "incomingMsgs,subscriptions,retainedMsgs"},
                                {"startTs", "0"},
                                {"endTs", "120000"},
                                {"orderBy", "ASC"}});
    const json body = timeseries_body(req, two_nodes());
    EXPECT_EQ(body["incomingMsgs"], json::parse(R"([{"ts":0,"value":15},{"ts":60000,"value":20},
                                                    {"ts":120000,"value":7}])"));
    EXPECT_EQ(body["subscriptions"], json::parse(R"([{"ts":0,"value":42}])"));
    EXPECT_EQ(body["retainedMsgs"], json::array());
}

TEST(timeseries_body, one_node_newest_first_by_default_and_limited) {
    std::vector<stats_point> points;
    for (std::int64_t m = 0; m < 5; ++m) {
        points.push_back({"n1", "sessions", m * 60000, m});
    }
    auto req =
        parsed("n1", {{"keys", "sessions"}, {"startTs", "0"}, {"endTs", "300000"}, {"limit", "2"}});
    EXPECT_EQ(timeseries_body(req, points)["sessions"],
              json::parse(R"([{"ts":240000,"value":4},{"ts":180000,"value":3}])"));
    req.descending = false;
    EXPECT_EQ(timeseries_body(req, points)["sessions"],
              json::parse(R"([{"ts":0,"value":0},{"ts":60000,"value":1}])"));
}

TEST(timeseries_body, buckets_start_at_start_ts_and_aggregate_each_way) {
    std::vector<stats_point> points;
    for (std::int64_t m = 0; m < 6; ++m) {
        points.push_back({"n1", "outgoingMsgs", 1000 + m * 60000, m + 1});  // 1..6
    }
    auto req = parsed("n1", {{"keys", "outgoingMsgs"},
                             {"startTs", "1000"},
                             {"endTs", "400000"},
                             {"agg", "SUM"},
                             {"interval", "180000"},
                             {"orderBy", "ASC"}});
    EXPECT_EQ(timeseries_body(req, points)["outgoingMsgs"],
              json::parse(R"([{"ts":1000,"value":6},{"ts":181000,"value":15}])"));
    req.agg = stats_aggregation::min;
    EXPECT_EQ(timeseries_body(req, points)["outgoingMsgs"],
              json::parse(R"([{"ts":1000,"value":1},{"ts":181000,"value":4}])"));
    req.agg = stats_aggregation::max;
    EXPECT_EQ(timeseries_body(req, points)["outgoingMsgs"],
              json::parse(R"([{"ts":1000,"value":3},{"ts":181000,"value":6}])"));
    req.agg = stats_aggregation::avg;
    EXPECT_EQ(timeseries_body(req, points)["outgoingMsgs"],
              json::parse(R"([{"ts":1000,"value":2.0},{"ts":181000,"value":5.0}])"));
}

}  // namespace
}  // namespace starling::http
