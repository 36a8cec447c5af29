#pragma once

// An integration's definition: what the management API accepts, the metadata store keeps
// (`integration` rows) and the executor runs. Only HTTP targets are executed so far; MQTT and
// KAFKA definitions are refused with a clear error rather than stored and ignored.
//
// JSON shape (the body of POST /api/integration and every answer):
//   {"id", "createdTime", "name", "type": "HTTP", "enabled",
//    "configuration": {
//      "topicFilters": ["sensors/#", ...],
//      "clientConfiguration": {
//        "restEndpointUrl": "https://host/path", "requestMethod": "POST",
//        "headers": {"X-Key": "v"},
//        "credentials": {"type": "anonymous" | "basic" | "bearer", "username", "password",
//                        "token"},
//        "payloadContentType": "JSON" | "TEXT" | "BINARY",
//        "readTimeoutMs": 10000, "maxParallelRequestsCount": 1,
//        "maxRetries": 3, "retryBackoffMs": 500, "retryBackoffMaxMs": 30000,
//        "trustStoreFile": "", "verifyTls": true}},
//    "additionalInfo": {...}}
// Pure functions; no I/O.

#include "auth/http_client.h"
#include "starling/metadata_store.h"

#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace starling::integration {

// How a message becomes an HTTP body.
enum class payload_format : std::uint8_t {
    json,    // an envelope: topic, qos, retain, client id, properties, timestamp, base64 payload
    text,    // the payload as it is, Content-Type text/plain
    binary,  // the payload as it is, Content-Type application/octet-stream
};

struct http_target {
    std::string url_text;  // as configured, for answers
    auth::url url;
    std::string method = "POST";
    auth::http_headers headers;  // configured headers, Authorization included when set
    payload_format payload = payload_format::json;
    std::chrono::milliseconds request_timeout{10'000};
    std::size_t max_in_flight = 1;  // 1 keeps each MQTT topic's messages in order
    std::uint32_t max_retries = 3;  // after the first attempt; then the message fails
    std::chrono::milliseconds retry_first{500};
    std::chrono::milliseconds retry_max{30'000};
    std::string ca_file;  // https trust store; empty: the system's
    bool verify_tls = true;
};

struct definition {
    std::string id;
    std::int64_t created_time_ms = 0;
    std::string name;
    std::string type = "HTTP";
    bool enabled = true;
    std::vector<std::string> topic_filters;
    http_target http;
    std::string configuration;    // the JSON document as stored
    std::string additional_info;  // JSON document or empty
};

// A definition from an API body. The id and creation time are taken as given (the caller
// assigns them for a new integration). Errors name the field: "configuration.topicFilters: ...".
std::variant<definition, std::string> from_json(const nlohmann::json& body);

// A stored row back into a definition (the same checks: a row written by an older build that no
// longer passes them is reported, not run).
std::variant<definition, std::string> from_row(const integration_row& row);

integration_row to_row(const definition& d);
nlohmann::json to_json(const definition& d);

// RFC 4648 §4 base64 (with padding).
std::string base64_encode(std::string_view bytes);

}  // namespace starling::integration
