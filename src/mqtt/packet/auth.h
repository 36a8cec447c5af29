#pragma once

// AUTH (MQTT 5.0 section 3.15): enhanced authentication exchange. v5 only.

#include "mqtt/properties.h"
#include "mqtt/reason_code.h"

namespace starling::mqtt {

struct auth {
    mqtt::reason_code reason_code = mqtt::reason_code::success;
    mqtt::properties properties;

    bool operator==(const auth&) const = default;
};

}  // namespace starling::mqtt
