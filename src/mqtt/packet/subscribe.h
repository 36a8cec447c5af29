#pragma once

// SUBSCRIBE (MQTT 3.1.1 section 3.8, MQTT 5.0 section 3.8). At 3.x only the QoS of the
// subscription options exists on the wire.

#include "mqtt/properties.h"
#include "mqtt/qos.h"

#include <cstdint>
#include <string>
#include <vector>

namespace starling::mqtt {

// Retain Handling (MQTT 5.0 section 3.8.3.1).
enum class retain_handling : std::uint8_t {
    send_on_subscribe = 0,
    send_if_new_subscription = 1,
    do_not_send = 2,
};

struct subscription_options {
    mqtt::qos qos = mqtt::qos::at_most_once;
    bool no_local = false;
    bool retain_as_published = false;
    mqtt::retain_handling retain_handling = mqtt::retain_handling::send_on_subscribe;

    bool operator==(const subscription_options&) const = default;
};

struct subscription {
    std::string filter;
    subscription_options options;

    bool operator==(const subscription&) const = default;
};

struct subscribe {
    std::uint16_t packet_id = 0;
    std::vector<subscription> subscriptions;
    // v5: subscription identifier (at most one) and user properties.
    mqtt::properties properties;

    bool operator==(const subscribe&) const = default;
};

}  // namespace starling::mqtt
