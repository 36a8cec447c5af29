#pragma once

// UNSUBSCRIBE (MQTT 3.1.1 section 3.10, MQTT 5.0 section 3.10).

#include "mqtt/properties.h"

#include <cstdint>
#include <string>
#include <vector>

namespace starling::mqtt {

struct unsubscribe {
    std::uint16_t packet_id = 0;
    std::vector<std::string> filters;
    // v5: user properties only.
    mqtt::properties properties;

    bool operator==(const unsubscribe&) const = default;
};

}  // namespace starling::mqtt
