#pragma once

// POST /api/mqtt/publish: an operator publishes a message through the broker's normal publish
// path (the log, then every matching subscriber, retained when asked), as a client would.
//
// Body: {"topic": "plant/7/cmd", "payload": "reboot", "payloadEncoding": "text" | "base64",
//        "qos": 0..2, "retain": false, "userProperties": [{"k": "...", "v": "..."}],
//        "contentType": "...", "messageExpiryInterval": seconds, "responseTopic": "...",
//        "correlationData": "..."}
// Only "topic" is required (payload "", QoS 0, retain false). The answer is 200
// {"topic","qos","retain","payloadBytes"} once the message log acknowledged the message —
// what a QoS 1 publisher's PUBACK means — 400 naming a bad field, 409 when a retained message
// cannot be stored (the node holds its maximum), 503 when the log refused it.
//
// Needs the admin bearer token (401 otherwise); not registered without one.
// Lifecycle: `publish` must outlive the server. Concurrency: `publish` is called on the I/O
// thread and must not block; its completion may run on any thread.

#include "http/api_support.h"
#include "http/router.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace starling::http {

struct publish_request {
    std::string topic;
    std::string payload;  // bytes (decoded from base64 when payloadEncoding says so)
    int qos = 0;
    bool retain = false;
    std::vector<std::pair<std::string, std::string>> user_properties;
    std::optional<std::string> content_type;
    std::optional<std::uint32_t> message_expiry_interval;
    std::optional<std::string> response_topic;
    std::optional<std::string> correlation_data;
};

enum class publish_outcome {
    published,
    bad_request,       // `message` names the field (topic, responseTopic)
    retained_refused,  // the node holds its maximum of retained messages
    unavailable,       // the log refused the message
};

struct publish_api {
    std::function<void(publish_request, std::function<void(publish_outcome, std::string message)>)>
        publish;
    api_access access;  // who may call these routes
};

void add_publish_routes(router& routes, publish_api api);

// The request in a JSON body, or the 400 naming the bad field. Exposed for tests.
std::variant<publish_request, response> parse_publish_request(std::string_view body);

}  // namespace starling::http
