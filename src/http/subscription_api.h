#pragma once

// TBMQ's subscription REST API (SubscriptionController) on Starling's router:
//
//   GET  /api/subscription?clientId=<id>   the session's subscriptions (the shape of
//        /api/client-session/details' "subscriptions"); 404 when the client id has no session
//   GET  /api/subscription?pageSize=&page=&textSearch=   every session's subscriptions in the
//        cluster, PageData of {"clientId", "topicFilter", "qos", "options", "subscriptionId"}
//        ordered by client id then filter; textSearch keeps filters containing the text
//   POST /api/subscription  {"clientId": "...", "subscriptions": [{"topicFilter": "a/#",
//        "qos": 1 | "AT_LEAST_ONCE", "options": {"noLocal", "retainAsPublish",
//        "retainHandling": 0..2}, "subscriptionId": 1..268435455}]}
//        the session's subscriptions become exactly these (connected or offline, on any node);
//        nothing is sent to the client. 200 {"clientId", "subscriptions": n}; 400 naming a bad
//        field (an invalid filter, No Local on a shared one, more than the per-client limit);
//        404 no session
//
// Needs the admin bearer token (401 otherwise); not registered without one.
// Lifecycle: the functions must outlive the server. Concurrency: they are called on the I/O
// thread and must not block; completions may run on any thread.

#include "http/api_support.h"
#include "http/client_session_api.h"
#include "http/router.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace starling::http {

struct subscription_api {
    // nullopt: no session.
    std::function<void(const std::string& client_id,
                       std::function<void(std::optional<std::vector<subscription_view>>)>)>
        list;
    // `problem` non-empty: the set is refused (400 with that message, which names the
    // field); otherwise the outcome (done, not_found, unavailable).
    std::function<void(const std::string& client_id, std::vector<subscription_view>,
                       std::function<void(session_action_outcome, std::string problem)>)>
        replace;
    api_access access;
    // Every session's subscriptions (clientId, subscription): from the actors of this node's
    // connected clients, the mirror of client.subscriptions for the others. Called on the I/O
    // thread; answers on any thread.
    using subscription_rows = std::vector<std::pair<std::string, subscription_view>>;
    std::function<void(std::function<void(subscription_rows)>)> all;
};

void add_subscription_routes(router& routes, subscription_api api);

// The POST body, or the 400 naming the bad field. Exposed for tests.
std::variant<std::pair<std::string, std::vector<subscription_view>>, response>
parse_subscription_update(std::string_view body);

}  // namespace starling::http
