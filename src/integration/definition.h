#pragma once

// An integration's definition: what the management API accepts, the metadata store keeps
// (`integration` rows) and the executor runs: HTTP, KAFKA and MQTT targets.
//
// JSON shape (the body of POST /api/integration and every answer):
//   {"id", "createdTime", "name", "type": "HTTP" | "KAFKA" | "MQTT", "enabled",
//    "configuration": {
//      "topicFilters": ["sensors/#", ...],
//      "lifecycleEvents": ["CONNECTED", "DISCONNECTED", "SUBSCRIBED", "UNSUBSCRIBED",
//                          "AUTH_FAILED"]  (optional; topicFilters may then be empty),
//      "clientConfiguration": {
//        -- every type --
//        "payloadContentType": "JSON" | "TEXT" | "BINARY",
//        "maxParallelRequestsCount": 1, "maxRetries": 3, "retryBackoffMs": 500,
//        "retryBackoffMaxMs": 30000,
//        -- HTTP --
//        "restEndpointUrl": "https://host/path", "requestMethod": "POST",
//        "headers": {"X-Key": "v"},
//        "credentials": {"type": "anonymous" | "basic" | "bearer", "username", "password",
//                        "token"},
//        "readTimeoutMs": 10000, "trustStoreFile": "", "verifyTls": true,
//        -- KAFKA --
//        "bootstrapServers": "host:9092,host2:9092", "topic": "mqtt-in",
//        "key": "${topic}" (also "${clientId}", literal text around them, or "" for none),
//        "acks": "all" | "1" | "0", "compression": "none" | "gzip" | "snappy" | "lz4" | "zstd",
//        "lingerMs": 0, "deliveryTimeoutMs": 10000, "kafkaHeaders": {"name": "value"},
//        "otherProperties": {"security.protocol": "SASL_SSL", ...}  (librdkafka names),
//        -- MQTT --
//        "host", "port": 1883, "ssl": false, "trustStoreFile", "verifyTls": true,
//        "topicName": "${topic}" (also "${clientId}" and literal text), "clientId",
//        "eventTopicName": "starling/events/${clientId}" (lifecycle events),
//        "mqttVersion": 5 | 4, "qos": 1, "retained": false,
//        "credentials": {"type": "anonymous" | "basic", "username", "password"},
//        "keepAliveSec": 60, "connectTimeoutMs": 10000, "deliveryTimeoutMs": 10000,
//        "cleanStart": true, "sessionExpiryInterval": 0}},
//   payloadContentType defaults to BINARY for MQTT (the payload as published: a bridge).
//    "additionalInfo": {...}}
// Pure functions; no I/O.

#include "auth/http_client.h"
#include "starling/metadata_store.h"

#include "integration/matcher.h"
#include <nlohmann/json_fwd.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace starling::integration {

// How a message becomes an HTTP body.
enum class payload_format : std::uint8_t {
    json,    // an envelope: topic, qos, retain, client id, properties, timestamp, base64 payload
    text,    // the payload as it is, Content-Type text/plain
    binary,  // the payload as it is, Content-Type application/octet-stream
};

// How the executor paces sends to any target.
struct delivery_settings {
    std::size_t max_in_flight = 1;  // 1 keeps each MQTT topic's messages in order
    std::uint32_t max_retries = 3;  // after the first attempt; then the message fails
    std::chrono::milliseconds retry_first{500};
    std::chrono::milliseconds retry_max{30'000};
};

struct http_target {
    std::string url_text;  // as configured, for answers
    auth::url url;
    std::string method = "POST";
    auth::http_headers headers;  // configured headers, Authorization included when set
    std::chrono::milliseconds request_timeout{10'000};
    std::string ca_file;  // https trust store; empty: the system's
    bool verify_tls = true;
};

struct kafka_target {
    std::string bootstrap_servers;  // host:port[,host:port...]
    std::string topic;
    std::string key_template = "${topic}";  // "${topic}" keeps each MQTT topic on one partition
    std::string acks = "all";
    std::string compression = "none";
    std::chrono::milliseconds linger{0};  // 0: one message in flight is sent at once
    std::chrono::milliseconds delivery_timeout{10'000};
    std::vector<std::pair<std::string, std::string>> headers;
    std::vector<std::pair<std::string, std::string>> other_properties;  // librdkafka, applied last
};

struct mqtt_target {
    std::string host;
    std::uint16_t port = 1883;
    bool tls = false;     // ssl:// instead of tcp://
    std::string ca_file;  // the broker's CA (PEM); empty: the system's
    bool verify_tls = true;
    std::string topic_template = "${topic}";                           // the topic published to
    std::string event_topic_template = "starling/events/${clientId}";  // lifecycle events
    std::string client_id;  // empty: "starling-ie-<integration id>"
    int mqtt_version = 5;   // 4 (3.1.1) or 5
    int qos = 1;            // 0, 1 or 2: success is PUBACK / PUBCOMP
    bool retain = false;
    std::string username;
    std::string password;
    std::chrono::seconds keep_alive{60};
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds delivery_timeout{10'000};
    bool clean_start = true;
    std::uint32_t session_expiry = 0;  // MQTT 5: seconds the external broker keeps the session
};

// The first host and port of a bootstrap list ("h1:9092,h2:9092" → {"h1", "9092"}), or none when
// it is not host:port.
std::optional<std::pair<std::string, std::string>> kafka_bootstrap_host_port(
    std::string_view servers);

// "${topic}" and "${clientId}" in `text` replaced by the message's.
std::string expand_template(std::string_view text, std::string_view topic,
                            std::string_view client_id);

struct definition {
    std::string id;
    std::int64_t created_time_ms = 0;
    std::string name;
    std::string type = "HTTP";  // "HTTP", "KAFKA" or "MQTT": which target below is set
    bool enabled = true;
    std::vector<std::string> topic_filters;
    std::uint32_t events = 0;  // event_bit()s of the lifecycle events it is sent
    payload_format payload = payload_format::json;
    delivery_settings delivery;
    http_target http;
    kafka_target kafka;
    mqtt_target mqtt;
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

// A stored row as the value of its ie.downlink.<type> record (integration_service.h), and
// back; nullopt for a value that is not one.
std::string encode_row(const integration_row& row);
std::optional<integration_row> decode_row(const std::string& value);

// RFC 4648 §4 base64 (with padding).
std::string base64_encode(std::string_view bytes);

}  // namespace starling::integration
