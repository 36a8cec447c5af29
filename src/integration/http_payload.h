#pragma once

// The HTTP request body an integration sends for one message, and its Content-Type.
//
// JSON (the default) is an envelope a back end can read without knowing MQTT:
//   {"topic", "qos", "retain", "clientId" (the publisher), "node" (where it was published),
//    "ts" (ms since the epoch, when the broker accepted it), "payload" (base64, so binary
//    payloads survive), "properties": {"payloadFormatIndicator", "contentType",
//    "responseTopic", "correlationData" (base64), "userProperties": [{"key", "value"}]}}
// (properties present only when the publisher set them). TEXT and BINARY send the payload
// itself. Pure functions.

#include "broker/message.h"

#include "integration/definition.h"

#include <string>

namespace starling::integration {

struct http_body {
    std::string content_type;
    std::string body;
};

http_body make_http_body(const broker::app_message& msg, payload_format format);

}  // namespace starling::integration
