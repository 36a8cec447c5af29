#include "integration/http_payload.h"

#include <nlohmann/json.hpp>

namespace starling::integration {

http_body make_http_body(const broker::app_message& msg, payload_format format) {
    switch (format) {
        case payload_format::text:
            return {"text/plain; charset=utf-8", msg.payload};
        case payload_format::binary:
            return {"application/octet-stream", msg.payload};
        case payload_format::json:
            break;
    }
    using json = nlohmann::json;
    json props = json::object();
    const auto& p = msg.properties;
    if (p.payload_format_indicator) {
        props["payloadFormatIndicator"] = *p.payload_format_indicator;
    }
    if (p.content_type) {
        props["contentType"] = *p.content_type;
    }
    if (p.response_topic) {
        props["responseTopic"] = *p.response_topic;
    }
    if (p.correlation_data) {
        props["correlationData"] = base64_encode(*p.correlation_data);
    }
    if (!p.user_properties.empty()) {
        json users = json::array();
        for (const auto& u : p.user_properties) {
            users.push_back({{"key", u.first}, {"value", u.second}});
        }
        props["userProperties"] = std::move(users);
    }
    json envelope = {{"topic", msg.topic},
                     {"qos", static_cast<int>(msg.qos)},
                     {"retain", msg.retain},
                     {"clientId", msg.publisher_id},
                     {"node", msg.node_id},
                     {"ts", msg.created_at_ms},
                     {"payload", base64_encode(msg.payload)},
                     {"properties", std::move(props)}};
    // Topics and ids are UTF-8 (MQTT requires it); replace anything invalid rather than throw.
    return {"application/json", envelope.dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace starling::integration
