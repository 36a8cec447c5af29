#pragma once

// CONNACK (MQTT 3.1.1 section 3.2, MQTT 5.0 section 3.2). The reason code is always held in v5
// terms; at 3.x the encoder maps it to a connect_return_code and the decoder maps back.

#include "mqtt/properties.h"
#include "mqtt/reason_code.h"

namespace starling::mqtt {

struct connack {
    bool session_present = false;
    mqtt::reason_code reason_code = mqtt::reason_code::success;
    mqtt::properties properties;

    bool operator==(const connack&) const = default;
};

}  // namespace starling::mqtt
