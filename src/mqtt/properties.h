#pragma once

// MQTT v5 properties. One struct holds every property as an optional field named after the
// specification; each packet type uses the subset the specification allows (the decoder rejects
// the others, the encoder skips them). Binary data is held in std::string. At protocol
// versions 3.x properties do not exist: the encoder writes none and the decoder yields none.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace starling::mqtt {

// Property identifiers (MQTT 5.0 section 2.2.2.2).
enum class property_id : std::uint8_t {
    payload_format_indicator = 0x01,
    message_expiry_interval = 0x02,
    content_type = 0x03,
    response_topic = 0x08,
    correlation_data = 0x09,
    subscription_identifier = 0x0B,
    session_expiry_interval = 0x11,
    assigned_client_identifier = 0x12,
    server_keep_alive = 0x13,
    authentication_method = 0x15,
    authentication_data = 0x16,
    request_problem_information = 0x17,
    will_delay_interval = 0x18,
    request_response_information = 0x19,
    response_information = 0x1A,
    server_reference = 0x1C,
    reason_string = 0x1F,
    receive_maximum = 0x21,
    topic_alias_maximum = 0x22,
    topic_alias = 0x23,
    maximum_qos = 0x24,
    retain_available = 0x25,
    user_property = 0x26,
    maximum_packet_size = 0x27,
    wildcard_subscription_available = 0x28,
    subscription_identifier_available = 0x29,
    shared_subscription_available = 0x2A,
};

using user_property = std::pair<std::string, std::string>;

struct properties {
    std::optional<std::uint8_t> payload_format_indicator;
    std::optional<std::uint32_t> message_expiry_interval;
    std::optional<std::string> content_type;
    std::optional<std::string> response_topic;
    std::optional<std::string> correlation_data;
    // Repeatable in PUBLISH (server to client); at most one in SUBSCRIBE. Empty = absent.
    std::vector<std::uint32_t> subscription_identifiers;
    std::optional<std::uint32_t> session_expiry_interval;
    std::optional<std::string> assigned_client_identifier;
    std::optional<std::uint16_t> server_keep_alive;
    std::optional<std::string> authentication_method;
    std::optional<std::string> authentication_data;
    std::optional<std::uint8_t> request_problem_information;
    std::optional<std::uint32_t> will_delay_interval;
    std::optional<std::uint8_t> request_response_information;
    std::optional<std::string> response_information;
    std::optional<std::string> server_reference;
    std::optional<std::string> reason_string;
    std::optional<std::uint16_t> receive_maximum;
    std::optional<std::uint16_t> topic_alias_maximum;
    std::optional<std::uint16_t> topic_alias;
    std::optional<std::uint8_t> maximum_qos;
    std::optional<std::uint8_t> retain_available;
    // Repeatable, order preserved, duplicates allowed (MQTT 5.0 section 3.1.2.11.8).
    std::vector<user_property> user_properties;
    std::optional<std::uint32_t> maximum_packet_size;
    std::optional<std::uint8_t> wildcard_subscription_available;
    std::optional<std::uint8_t> subscription_identifier_available;
    std::optional<std::uint8_t> shared_subscription_available;

    bool operator==(const properties&) const = default;

    // True when no property is set.
    bool empty() const noexcept;
};

}  // namespace starling::mqtt
