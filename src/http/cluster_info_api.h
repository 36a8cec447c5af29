#pragma once

// GET /api/app/cluster-info: the cluster's nodes as any node knows them (broker/node_directory.h:
// heartbeats on the compacted sys.nodes topic; embedded mode: this node alone).
//
//   {"nodes": [{"nodeId", "version", "startedAt" (ms), "uptimeSeconds", "sessions" (connected
//               clients), "health" (UP | DEGRADED | OUT_OF_SERVICE | DOWN | UNREACHABLE),
//               "lastSeen" (ms of its last heartbeat; now for the node asked), "self"}],
//    "totalSessions": connected clients of the reachable nodes,
//    "version": the version of the node asked}
//
// UNREACHABLE: no heartbeat for three heartbeat intervals (a node that crashed or lost the log);
// its other fields are from its last heartbeat. Needs the admin bearer token (401 otherwise);
// not registered without one. Concurrency: `nodes` runs on the I/O thread and must not block.

#include "http/api_support.h"
#include "http/router.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace starling::http {

struct cluster_node_view {
    std::string node_id;
    std::string version;
    std::int64_t started_at_ms = 0;
    std::int64_t last_seen_ms = 0;
    std::int64_t connected_sessions = 0;
    std::string health;
    bool self = false;
    bool reachable = true;
};

struct cluster_info_api {
    std::function<std::vector<cluster_node_view>()> nodes;  // the node asked first
    std::function<std::int64_t()> now_ms;
    api_access access;
};

void add_cluster_info_routes(router& routes, cluster_info_api api);

}  // namespace starling::http
