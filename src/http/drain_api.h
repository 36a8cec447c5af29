#pragma once

// Draining this node (broker/node_drain.h), for a pod's preStop hook or an operator:
//   POST /api/app/drain   optional body {"rate": connections/s, "serverReference": "host:port"}
//     → 202 and the progress when the drain starts; 200 and the progress when one already runs
//       (the first one's settings stay); 503 while the node starts or stops. Without a body the
//       configured starling.drain.* apply.
//   GET  /api/app/drain   → the progress:
//     {"state": "SERVING" | "DRAINING" | "DRAINED", "startedAt": ms, "drainedAt": ms,
//      "disconnected": connections the drain closed, "remaining": clients still connected,
//      "rate": connections/s, "serverReference": what MQTT 5 clients are sent ("" none)}
// A bad body is a 400 naming the member. Draining is one-way: the node serves again only after
// a restart. Needs the admin bearer token (401 otherwise); not registered without one.
// Concurrency: handlers run on I/O threads; the hooks must not block.

#include "http/api_support.h"
#include "http/router.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace starling::http {

struct drain_progress_view {
    std::string state;  // SERVING, DRAINING or DRAINED
    std::int64_t started_at_ms = 0;
    std::int64_t drained_at_ms = 0;
    std::uint64_t disconnected = 0;
    std::uint64_t remaining = 0;
    double rate = 0;
    std::string server_reference;
};

struct drain_request {
    std::optional<double> rate;                   // connections/s; nullopt: configured
    std::optional<std::string> server_reference;  // nullopt: configured; "": none
};

enum class drain_start : std::uint8_t {
    started,
    already_draining,  // a drain started before: 200 with its progress
    not_serving,       // the node is starting or stopping: 503
};

struct drain_api {
    std::function<drain_start(const drain_request&)> start;
    std::function<drain_progress_view()> progress;
    api_access access;
};

void add_drain_routes(router& routes, drain_api api);

}  // namespace starling::http
