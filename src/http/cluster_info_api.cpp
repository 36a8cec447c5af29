#include "http/cluster_info_api.h"

#include "http/api_support.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <utility>

namespace starling::http {

void add_cluster_info_routes(router& routes, cluster_info_api api) {
    admin_routes admin(routes, api.access);
    if (!admin.enabled()) {
        spdlog::info("cluster-info REST API disabled (no admin token and admin login off)");
        return;
    }
    auto shared = std::make_shared<const cluster_info_api>(std::move(api));
    admin.add(verb::get, "/api/app/cluster-info", [shared](const request&) {
        using json = nlohmann::json;
        const std::int64_t now = shared->now_ms();
        json nodes = json::array();
        std::int64_t total = 0;
        std::string version;
        for (const auto& n : shared->nodes()) {
            if (n.reachable) {
                total += n.connected_sessions;
            }
            if (n.self) {
                version = n.version;
            }
            nodes.push_back(
                {{"nodeId", n.node_id},
                 {"version", n.version},
                 {"startedAt", n.started_at_ms},
                 {"uptimeSeconds", std::max<std::int64_t>(0, (now - n.started_at_ms) / 1000)},
                 {"sessions", n.connected_sessions},
                 {"health", n.reachable ? n.health : std::string("UNREACHABLE")},
                 {"lastSeen", n.last_seen_ms},
                 {"self", n.self}});
        }
        return json_response(
            {{"nodes", std::move(nodes)}, {"totalSessions", total}, {"version", version}});
    });
}

}  // namespace starling::http
