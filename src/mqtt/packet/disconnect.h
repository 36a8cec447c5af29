#pragma once

// DISCONNECT (MQTT 3.1.1 section 3.14, MQTT 5.0 section 3.14). At 3.x it is client to server
// only and carries nothing; at v5 either side may send it with a reason code.

#include "mqtt/properties.h"
#include "mqtt/reason_code.h"

namespace starling::mqtt {

struct disconnect {
    mqtt::reason_code reason_code = mqtt::reason_code::normal_disconnection;
    mqtt::properties properties;

    bool operator==(const disconnect&) const = default;
};

}  // namespace starling::mqtt
