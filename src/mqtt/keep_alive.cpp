#include "mqtt/keep_alive.h"

#include <algorithm>

namespace starling::mqtt {

keep_alive_terms negotiate_keep_alive(std::uint16_t requested, std::uint16_t server_maximum,
                                      protocol_version version) {
    const std::uint16_t maximum = std::max<std::uint16_t>(server_maximum, 1);
    if (requested != 0 && requested <= maximum) {
        return {.seconds = requested, .server_keep_alive = std::nullopt};
    }
    // Asked for none or for more than the maximum: the maximum applies. Only v5 can say so
    // (Server Keep Alive, which the client must then use: MQTT 5.0 section 3.2.2.3.14).
    keep_alive_terms terms{.seconds = maximum, .server_keep_alive = std::nullopt};
    if (version == protocol_version::v5) {
        terms.server_keep_alive = maximum;
    }
    return terms;
}

}  // namespace starling::mqtt
