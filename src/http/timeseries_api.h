#pragma once

// GET /api/timeseries/{entityId}/values: the statistics series every node samples
// (broker/stats_history.h), for dashboards. TBMQ's path and answer shape:
//
//   ?keys=incomingMsgs,sessions   required; any of metadata_store.h's stats_keys
//   &startTs=…&endTs=…            required, epoch ms, both inclusive
//   &agg=NONE|SUM|AVG|MIN|MAX     optional (NONE): combine the points of each `interval`
//   &interval=…                   ms, required with an aggregation; buckets start at startTs
//   &orderBy=ASC|DESC             optional (DESC, as TBMQ)
//   &limit=…                      optional (10080, a week of minutes): points per key
//
//   → {"incomingMsgs": [{"ts": …, "value": …}, …], "sessions": […]} (a key with no points
//     maps to an empty array)
//
// entityId is a node's id (service.id), or `total` for the cluster: at each ts the nodes'
// points are summed, except for the mirrored keys (subscriptions, retainedMsgs: every node
// reports the same cluster-wide number), whose largest value is taken. A node stops writing
// when it stops, so the total of a past minute counts the nodes that were up then.
//
// Bounds: one request reads at most `max_points_read` stored points (a week of every key on
// three nodes, about 20 MB while the answer is built); a wider query gets 400 asking for a
// shorter range or fewer keys.
//
// Needs the admin bearer token (401 otherwise); not registered without one. Concurrency: the
// handler runs on the I/O thread and only queues the store call; the answer is built on the
// store's thread.

#include "http/api_support.h"
#include "http/router.h"
#include "starling/metadata_store.h"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace starling::http {

inline constexpr std::string_view total_entity_id = "total";
inline constexpr std::size_t max_points_read = 250'000;

enum class stats_aggregation { none, sum, avg, min, max };

// A parsed request.
struct timeseries_request {
    std::string entity_id;  // a node id, or total_entity_id
    std::vector<std::string> keys;
    std::int64_t start_ms = 0;
    std::int64_t end_ms = 0;
    stats_aggregation agg = stats_aggregation::none;
    std::int64_t interval_ms = 0;  // > 0 when agg != none
    bool descending = true;
    std::size_t limit = 10080;
};

// The request in `params` for `entity_id`, or the 400 naming the bad parameter.
std::variant<timeseries_request, response> timeseries_request_of(std::string entity_id,
                                                                 const query_params& params);

// The answer's body from the store's points (ordered by key, ts, entity as read_stats returns
// them): the nodes combined for `total`, then aggregated, ordered and limited per key.
nlohmann::json timeseries_body(const timeseries_request& req,
                               const std::vector<stats_point>& points);

void add_timeseries_routes(router& routes, metadata_store& store, api_access access);

}  // namespace starling::http
