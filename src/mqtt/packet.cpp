#include "mqtt/packet.h"

namespace starling::mqtt {

std::string_view to_string(packet_type type) noexcept {
    switch (type) {
        case packet_type::connect:
            return "CONNECT";
        case packet_type::connack:
            return "CONNACK";
        case packet_type::publish:
            return "PUBLISH";
        case packet_type::puback:
            return "PUBACK";
        case packet_type::pubrec:
            return "PUBREC";
        case packet_type::pubrel:
            return "PUBREL";
        case packet_type::pubcomp:
            return "PUBCOMP";
        case packet_type::subscribe:
            return "SUBSCRIBE";
        case packet_type::suback:
            return "SUBACK";
        case packet_type::unsubscribe:
            return "UNSUBSCRIBE";
        case packet_type::unsuback:
            return "UNSUBACK";
        case packet_type::pingreq:
            return "PINGREQ";
        case packet_type::pingresp:
            return "PINGRESP";
        case packet_type::disconnect:
            return "DISCONNECT";
        case packet_type::auth:
            return "AUTH";
    }
    return "UNKNOWN";
}

}  // namespace starling::mqtt
