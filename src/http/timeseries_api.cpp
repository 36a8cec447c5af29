#include "http/timeseries_api.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <utility>

namespace starling::http {
namespace {

using json = nlohmann::json;

constexpr std::string_view prefix = "/api/timeseries/";
constexpr std::string_view values_suffix = "/values";
constexpr std::size_t max_limit = 100'000;
constexpr std::int64_t max_buckets = 100'000;

response bad_request(std::string message) {
    return error_response(status_code::bad_request, message);
}

std::optional<std::int64_t> integer_of(std::string_view text) {
    std::int64_t value = 0;
    const auto* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, value);
    if (ec != std::errc{} || ptr != end || text.empty()) {
        return std::nullopt;
    }
    return value;
}

bool mirrored(std::string_view key) {
    for (const auto& k : stats_keys) {
        if (k.key == key) {
            return k.mirrored;
        }
    }
    return false;
}

// One key's points, one per ts (the nodes already combined).
using series = std::vector<std::pair<std::int64_t, std::int64_t>>;

// The points of `key` in `points` (ordered by key, ts, entity): for the cluster, the nodes'
// values at each ts summed, or the largest taken for a mirrored key.
series series_of(std::string_view key, const std::vector<stats_point>& points, bool combine) {
    series out;
    const bool take_max = mirrored(key);
    for (const auto& p : points) {
        if (p.key != key) {
            continue;
        }
        if (combine && !out.empty() && out.back().first == p.ts_ms) {
            auto& v = out.back().second;
            v = take_max ? std::max(v, p.value) : v + p.value;
        } else {
            out.emplace_back(p.ts_ms, p.value);
        }
    }
    return out;
}

json aggregated(const series& points, const timeseries_request& req) {
    struct bucket {
        std::int64_t sum = 0;
        std::int64_t min = 0;
        std::int64_t max = 0;
        std::int64_t count = 0;
    };
    std::map<std::int64_t, bucket> buckets;  // by bucket start
    for (const auto& [ts, value] : points) {
        const std::int64_t start =
            req.start_ms + (ts - req.start_ms) / req.interval_ms * req.interval_ms;
        auto& b = buckets[start];
        b.min = b.count == 0 ? value : std::min(b.min, value);
        b.max = b.count == 0 ? value : std::max(b.max, value);
        b.sum += value;
        ++b.count;
    }
    json out = json::array();
    for (const auto& [ts, b] : buckets) {
        json value;
        switch (req.agg) {
            case stats_aggregation::sum:
                value = b.sum;
                break;
            case stats_aggregation::avg:
                value = static_cast<double>(b.sum) / static_cast<double>(b.count);
                break;
            case stats_aggregation::min:
                value = b.min;
                break;
            case stats_aggregation::max:
            case stats_aggregation::none:
                value = b.max;
                break;
        }
        out.push_back({{"ts", ts}, {"value", std::move(value)}});
    }
    return out;
}

// The newest `limit` entries for DESC (newest first), the earliest for ASC.
json ordered_and_limited(json entries, const timeseries_request& req) {
    auto& array = entries.get_ref<json::array_t&>();
    if (req.descending) {
        std::reverse(array.begin(), array.end());
    }
    if (array.size() > req.limit) {
        array.resize(req.limit);
    }
    return entries;
}

}  // namespace

std::variant<timeseries_request, response> timeseries_request_of(std::string entity_id,
                                                                 const query_params& params) {
    timeseries_request req;
    req.entity_id = std::move(entity_id);
    auto keys = params.find("keys");
    if (keys == params.end() || keys->second.empty()) {
        return bad_request("keys: required, a comma-separated list of statistics keys");
    }
    const std::string_view list = keys->second;
    for (std::size_t from = 0; from <= list.size();) {
        const auto comma = std::min(list.find(',', from), list.size());
        const std::string_view key = list.substr(from, comma - from);
        from = comma + 1;
        if (!stats_key_to_id(key)) {
            std::string known;
            for (const auto& k : stats_keys) {
                known += known.empty() ? "" : ", ";
                known += k.key;
            }
            return bad_request("keys: unknown statistics key \"" + std::string(key.substr(0, 64)) +
                               "\" (known: " + known + ")");
        }
        if (std::find(req.keys.begin(), req.keys.end(), key) == req.keys.end()) {
            req.keys.emplace_back(key);
        }
    }
    for (auto [name, field] : {std::pair{"startTs", &req.start_ms}, {"endTs", &req.end_ms}}) {
        auto it = params.find(name);
        auto value = it == params.end() ? std::nullopt : integer_of(it->second);
        if (!value || *value < 0) {
            return bad_request(std::string(name) + ": required, epoch milliseconds");
        }
        *field = *value;
    }
    if (req.end_ms < req.start_ms) {
        return bad_request("endTs: must not be before startTs");
    }
    if (auto it = params.find("agg"); it != params.end() && it->second != "NONE") {
        static constexpr std::pair<std::string_view, stats_aggregation> names[] = {
            {"SUM", stats_aggregation::sum},
            {"AVG", stats_aggregation::avg},
            {"MIN", stats_aggregation::min},
            {"MAX", stats_aggregation::max}};
        auto found = std::find_if(std::begin(names), std::end(names),
                                  [&](const auto& n) { return n.first == it->second; });
        if (found == std::end(names)) {
            return bad_request("agg: NONE, SUM, AVG, MIN or MAX");
        }
        req.agg = found->second;
        auto interval = params.find("interval");
        auto value = interval == params.end() ? std::nullopt : integer_of(interval->second);
        if (!value || *value <= 0) {
            return bad_request("interval: required with agg, milliseconds greater than 0");
        }
        if ((req.end_ms - req.start_ms) / *value >= max_buckets) {
            return bad_request("interval: more than " + std::to_string(max_buckets) +
                               " buckets between startTs and endTs; choose a longer interval");
        }
        req.interval_ms = *value;
    }
    if (auto it = params.find("orderBy"); it != params.end()) {
        if (it->second != "ASC" && it->second != "DESC") {
            return bad_request("orderBy: ASC or DESC");
        }
        req.descending = it->second == "DESC";
    }
    if (auto it = params.find("limit"); it != params.end()) {
        auto value = integer_of(it->second);
        if (!value || *value < 1 || *value > static_cast<std::int64_t>(max_limit)) {
            return bad_request("limit: 1.." + std::to_string(max_limit));
        }
        req.limit = static_cast<std::size_t>(*value);
    }
    return req;
}

json timeseries_body(const timeseries_request& req, const std::vector<stats_point>& points) {
    json body = json::object();
    const bool combine = req.entity_id == total_entity_id;
    for (const auto& key : req.keys) {
        series s = series_of(key, points, combine);
        json entries;
        if (req.agg == stats_aggregation::none) {
            entries = json::array();
            for (const auto& [ts, value] : s) {
                entries.push_back({{"ts", ts}, {"value", value}});
            }
        } else {
            entries = aggregated(s, req);
        }
        body[key] = ordered_and_limited(std::move(entries), req);
    }
    return body;
}

void add_timeseries_routes(router& routes, metadata_store& store, api_access access) {
    admin_routes api(routes, std::move(access));
    if (!api.enabled()) {
        spdlog::info("timeseries REST API disabled (no admin token and admin login off)");
        return;
    }
    metadata_store* db = &store;
    api.add_async(verb::get, std::string(prefix) + "*", [db](const request& req, responder done) {
        auto tail = path_tail(req, prefix);
        if (!tail || !tail->ends_with(values_suffix) || tail->size() == values_suffix.size()) {
            done(error_response(status_code::not_found,
                                "expected /api/timeseries/{entityId}/values"));
            return;
        }
        std::string entity = tail->substr(0, tail->size() - values_suffix.size());
        auto params = parsed_query(req);
        if (auto* bad = std::get_if<response>(&params)) {
            done(std::move(*bad));
            return;
        }
        auto parsed = timeseries_request_of(std::move(entity), std::get<query_params>(params));
        if (auto* bad = std::get_if<response>(&parsed)) {
            done(std::move(*bad));
            return;
        }
        auto wanted = std::make_shared<const timeseries_request>(
            std::get<timeseries_request>(std::move(parsed)));
        stats_query query{
            .keys = wanted->keys,
            .entity_id = wanted->entity_id == total_entity_id ? std::string() : wanted->entity_id,
            .start_ms = wanted->start_ms,
            .end_ms = wanted->end_ms,
            .limit = max_points_read + 1};
        db->read_stats(std::move(query), [done = std::move(done),
                                          wanted](result<std::vector<stats_point>> points) {
            if (!points) {
                spdlog::warn("GET /api/timeseries: metadata store failed: {}",
                             points.error().message());
                done(
                    error_response(status_code::service_unavailable,
                                   "GET: metadata store unavailable: " + points.error().message()));
                return;
            }
            if (points->size() > max_points_read) {
                done(bad_request("startTs, endTs: the range holds more than " +
                                 std::to_string(max_points_read) +
                                 " points; ask for a shorter range, fewer keys or one node"));
                return;
            }
            done(json_response(timeseries_body(*wanted, *points)));
        });
    });
}

}  // namespace starling::http
