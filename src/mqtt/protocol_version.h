#pragma once

// The three MQTT protocol levels Starling speaks. The numeric value is the "Protocol Level"
// byte of CONNECT, so a cast from the wire byte is meaningful once it has been range-checked.

#include <cstdint>
#include <string_view>

namespace starling::mqtt {

enum class protocol_version : std::uint8_t { v3_1 = 3, v3_1_1 = 4, v5 = 5 };

constexpr bool is_v5(protocol_version version) noexcept { return version == protocol_version::v5; }

constexpr std::string_view to_string(protocol_version version) noexcept {
    switch (version) {
        case protocol_version::v3_1:
            return "3.1";
        case protocol_version::v3_1_1:
            return "3.1.1";
        case protocol_version::v5:
            return "5.0";
    }
    return "unknown";
}

}  // namespace starling::mqtt
