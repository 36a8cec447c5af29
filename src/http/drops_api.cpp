#include "http/drops_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>

#include <charconv>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace starling::http {
namespace {

using json = nlohmann::json;
constexpr std::string_view path = "/api/drops";
constexpr std::size_t default_limit = 20;
constexpr std::size_t max_limit = 1000;

json counts_json(const metrics::drop_counts& counts) {
    json out = json::object();
    for (std::size_t i = 0; i < metrics::drop_reason_count; ++i) {
        if (counts[i] != 0) {
            out[std::string(metrics::to_string(static_cast<metrics::drop_reason>(i)))] = counts[i];
        }
    }
    return out;
}

response bad_request(std::string_view message) {
    return error_response(status_code::bad_request, message);
}

response answer(const request& req, const metrics::drop_log& drops) {
    auto params = query_of(req);
    if (!params) {
        return bad_request("malformed query string");
    }
    const auto get = [&](const char* name) -> const std::string* {
        auto it = params->find(name);
        return it == params->end() ? nullptr : &it->second;
    };
    metrics::drop_query q;
    const std::string* by = get("by");
    const std::string* client_id = get("clientId");
    const std::string* topic = get("topic");
    if (by != nullptr) {
        if (*by == "client") {
            q.by = metrics::drop_key_kind::client;
        } else if (*by == "topic") {
            q.by = metrics::drop_key_kind::topic;
        } else {
            return bad_request("by: expected client or topic, got '" + *by + "'");
        }
    } else if (topic != nullptr && client_id == nullptr) {
        q.by = metrics::drop_key_kind::topic;
    }
    if (client_id != nullptr) {
        if (q.by != metrics::drop_key_kind::client) {
            return bad_request(
                "clientId: only with by=client (drops are kept per client and per "
                "topic, not per pair)");
        }
        q.key = *client_id;
    }
    if (topic != nullptr) {
        if (q.by != metrics::drop_key_kind::topic) {
            return bad_request(
                "topic: only with by=topic (drops are kept per client and per "
                "topic, not per pair)");
        }
        q.key = *topic;
    }
    if (const std::string* reason = get("reason")) {
        metrics::drop_reason r{};
        if (!metrics::drop_reason_from_string(*reason, r)) {
            std::string known;
            for (std::size_t i = 0; i < metrics::drop_reason_count; ++i) {
                known += (i == 0 ? "" : ", ");
                known += metrics::to_string(static_cast<metrics::drop_reason>(i));
            }
            return bad_request("reason: unknown reason '" + *reason + "' (one of " + known + ")");
        }
        q.reason = r;
    }
    q.limit = default_limit;
    if (const std::string* limit = get("limit")) {
        std::size_t n = 0;
        const auto* end = limit->data() + limit->size();
        const auto [ptr, ec] = std::from_chars(limit->data(), end, n);
        if (ec != std::errc() || ptr != end || n < 1 || n > max_limit) {
            return bad_request("limit: expected an integer from 1 to " + std::to_string(max_limit) +
                               ", got '" + *limit + "'");
        }
        q.limit = n;
    }

    const auto report = drops.query(q);
    const char* key_name = q.by == metrics::drop_key_kind::client ? "clientId" : "topic";
    json data = json::array();
    for (const auto& row : report.rows) {
        data.push_back(
            {{key_name, row.key}, {"total", row.total}, {"reasons", counts_json(row.counts)}});
    }
    json body = {
        {"by", q.by == metrics::drop_key_kind::client ? "client" : "topic"},
        {"windowSeconds", drops.window().count()},
        {"bucketSeconds", drops.bucket_length().count()},
        {"total", report.total},
        {"totals", counts_json(report.totals)},
        {"keys", report.keys},
        {"evictions", report.evictions},
        {"matching", report.matching},
        {"data", std::move(data)},
    };
    // Client ids and topics are the clients' bytes: invalid UTF-8 becomes U+FFFD (found by
    // tests/fuzz/http_api; dump() would throw).
    return make_response(status_code::ok, "application/json",
                         body.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace

void add_drops_routes(router& routes, const metrics::drop_log& drops, api_access access) {
    admin_routes admin(routes, std::move(access));
    admin.add(verb::get, std::string(path),
              [&drops](const request& req) -> response { return answer(req, drops); });
}

}  // namespace starling::http
