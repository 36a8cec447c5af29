#pragma once

// PUBCOMP (MQTT 3.1.1 and 5.0 section 3.7). At 3.x only the packet identifier is on the wire; the
// reason code and properties are v5 only.

#include "mqtt/properties.h"
#include "mqtt/reason_code.h"

#include <cstdint>

namespace starling::mqtt {

struct pubcomp {
    std::uint16_t packet_id = 0;
    mqtt::reason_code reason_code = mqtt::reason_code::success;
    mqtt::properties properties;

    bool operator==(const pubcomp&) const = default;
};

}  // namespace starling::mqtt
