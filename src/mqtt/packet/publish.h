#pragma once

// PUBLISH (MQTT 3.1.1 section 3.3, MQTT 5.0 section 3.3). `packet_id` is meaningful only for
// QoS 1 and 2 (0 at QoS 0). An empty topic is legal only at v5 with a Topic Alias property.

#include "mqtt/properties.h"
#include "mqtt/qos.h"

#include <cstdint>
#include <string>

namespace starling::mqtt {

struct publish {
    std::string topic;
    std::string payload;
    mqtt::qos qos = mqtt::qos::at_most_once;
    bool retain = false;
    bool dup = false;
    std::uint16_t packet_id = 0;
    mqtt::properties properties;

    bool operator==(const publish&) const = default;
};

}  // namespace starling::mqtt
