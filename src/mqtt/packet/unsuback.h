#pragma once

// UNSUBACK (MQTT 3.1.1 section 3.11, MQTT 5.0 section 3.11). At 3.x only the packet identifier
// is on the wire: reason_codes is empty after decoding and ignored when encoding.

#include "mqtt/properties.h"
#include "mqtt/reason_code.h"

#include <cstdint>
#include <vector>

namespace starling::mqtt {

struct unsuback {
    std::uint16_t packet_id = 0;
    std::vector<mqtt::reason_code> reason_codes;
    mqtt::properties properties;

    bool operator==(const unsuback&) const = default;
};

}  // namespace starling::mqtt
