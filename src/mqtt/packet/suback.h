#pragma once

// SUBACK (MQTT 3.1.1 section 3.9, MQTT 5.0 section 3.9): one reason code per subscription, in
// order. At 3.x granted_qos_0/1/2 are written as 0/1/2 and every error code as 0x80.

#include "mqtt/properties.h"
#include "mqtt/reason_code.h"

#include <cstdint>
#include <vector>

namespace starling::mqtt {

struct suback {
    std::uint16_t packet_id = 0;
    std::vector<mqtt::reason_code> reason_codes;
    mqtt::properties properties;

    bool operator==(const suback&) const = default;
};

}  // namespace starling::mqtt
