#pragma once

// CONNECT (MQTT 3.1.1 section 3.1, MQTT 5.0 section 3.1): the first packet a client sends.
// `clean_start` is v3's Clean Session flag at 3.x. `password` is binary data.

#include "mqtt/properties.h"
#include "mqtt/protocol_version.h"
#include "mqtt/qos.h"

#include <cstdint>
#include <optional>
#include <string>

namespace starling::mqtt {

struct will_message {
    std::string topic;
    std::string payload;
    mqtt::qos qos = mqtt::qos::at_most_once;
    bool retain = false;
    // Will properties (v5 only): payload format, message expiry, content type, response topic,
    // correlation data, will delay interval, user properties.
    mqtt::properties properties;

    bool operator==(const will_message&) const = default;
};

struct connect {
    mqtt::protocol_version protocol_version = mqtt::protocol_version::v5;
    bool clean_start = true;
    std::uint16_t keep_alive = 0;
    std::string client_id;
    std::optional<will_message> will;
    std::optional<std::string> username;
    std::optional<std::string> password;
    mqtt::properties properties;

    bool operator==(const connect&) const = default;
};

}  // namespace starling::mqtt
