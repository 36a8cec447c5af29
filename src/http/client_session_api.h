#pragma once

// TBMQ's client-session REST API (ClientSessionController) on Starling's router:
//
//   GET    /api/client-session?clientId=<id>        one session (ShortClientSessionInfoDto); 404
//   GET    /api/client-session?pageSize=&page=&textSearch=&sortProperty=&sortOrder=
//          &connectionState=&clientType=&nodeId=&clientIpAddress=
//          TBMQ's PageData of sessions. textSearch keeps client ids containing it
//          (case-insensitive); connectionState CONNECTED | DISCONNECTED, clientType DEVICE |
//          APPLICATION, nodeId (exact) and clientIpAddress (contained) filter further;
//          sortProperty clientId (default) | connectionState | clientType | nodeId |
//          subscriptionsCount | connectedAt | disconnectedAt | clientIpAdr, sortOrder ASC | DESC
//   GET    /api/client-session/details?clientId=<id> the session with its subscriptions and, when
//          the node asked holds it, its in-flight and queued counts (null otherwise); 404
//   DELETE /api/client-session/disconnect?clientId=<id>[&sessionId=<id>]
//          disconnects the client (MQTT 5: DISCONNECT 0x98); a persistent session stays. 404
//          no such session, 409 not connected
//   DELETE /api/client-session/remove?clientId=<id>[&sessionId=<id>]
//          ends an offline session as its expiry would (subscriptions and queued messages go).
//          404 no such session, 409 connected (disconnect it first)
//
// A session is {"id","clientId","sessionId","connectionState","clientType","nodeId",
// "subscriptionsCount","connectedAt","disconnectedAt","clientIpAdr"} as TBMQ's DTO, plus
// Starling's "persistent", "sessionExpiryInterval" and "mqttVersion" ("3.1", "3.1.1", "5.0";
// null when unknown). A sessionId given must be the session's current one (so a stale page
// cannot act on a newer connection); without it the current session is meant.
//
// Every route needs the admin bearer token (401 otherwise) and is absent without one.
// Lifecycle: whatever the functions reference must outlive the server. Concurrency: `list` and
// `find` run on the I/O thread and must not block; the others answer from any thread.

#include "http/api_support.h"
#include "http/router.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace starling::http {

struct session_view {
    std::string client_id;
    std::string session_id;
    bool connected = false;
    bool application = false;  // clientType APPLICATION (else DEVICE)
    std::string node_id;
    std::size_t subscriptions_count = 0;
    std::int64_t connected_at_ms = 0;
    std::int64_t disconnected_at_ms = 0;
    std::string client_address;
    bool persistent = false;
    std::uint32_t session_expiry_interval = 0;
    std::uint32_t protocol_version = 0;  // 3, 4, 5; 0 unknown
};

struct subscription_view {
    std::string topic_filter;  // with its $share/<group>/ prefix when shared
    int qos = 0;
    bool no_local = false;
    bool retain_as_published = false;
    int retain_handling = 0;
    std::optional<std::uint32_t> subscription_id;
};

struct session_details_view {
    session_view session;
    std::vector<subscription_view> subscriptions;
    std::optional<std::size_t> in_flight;
    std::optional<std::size_t> queued;
};

enum class session_action_outcome { done, not_found, not_connected, connected, unavailable };

struct client_session_api {
    std::function<std::vector<session_view>()> list;
    std::function<std::optional<session_view>(const std::string& client_id)> find;
    std::function<void(const std::string& client_id,
                       std::function<void(std::optional<session_details_view>)>)>
        details;
    using action = std::function<void(const std::string& client_id, const std::string& session_id,
                                      std::function<void(session_action_outcome)>)>;
    action disconnect;
    action remove;
    api_access access;  // who may call these routes
};

void add_client_session_routes(router& routes, client_session_api api);

// A subscription as the API shows it: {"topicFilter", "qos": "AT_LEAST_ONCE", "options":
// {"noLocal", "retainAsPublish", "retainHandling"}, "subscriptionId"} (TBMQ's
// SubscriptionInfoDto).
nlohmann::json to_json(const subscription_view& s);

}  // namespace starling::http
