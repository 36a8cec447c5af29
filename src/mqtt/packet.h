#pragma once

// Every MQTT control packet as one variant. The alternatives are in packet-type order, so
// `index() + 1` is the packet type number on the wire (type_of relies on it).

#include "mqtt/packet/auth.h"
#include "mqtt/packet/connack.h"
#include "mqtt/packet/connect.h"
#include "mqtt/packet/disconnect.h"
#include "mqtt/packet/pingreq.h"
#include "mqtt/packet/pingresp.h"
#include "mqtt/packet/puback.h"
#include "mqtt/packet/pubcomp.h"
#include "mqtt/packet/publish.h"
#include "mqtt/packet/pubrec.h"
#include "mqtt/packet/pubrel.h"
#include "mqtt/packet/suback.h"
#include "mqtt/packet/subscribe.h"
#include "mqtt/packet/unsuback.h"
#include "mqtt/packet/unsubscribe.h"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>
#include <variant>

namespace starling::mqtt {

enum class packet_type : std::uint8_t {
    connect = 1,
    connack = 2,
    publish = 3,
    puback = 4,
    pubrec = 5,
    pubrel = 6,
    pubcomp = 7,
    subscribe = 8,
    suback = 9,
    unsubscribe = 10,
    unsuback = 11,
    pingreq = 12,
    pingresp = 13,
    disconnect = 14,
    auth = 15,
};

using packet = std::variant<connect, connack, publish, puback, pubrec, pubrel, pubcomp, subscribe,
                            suback, unsubscribe, unsuback, pingreq, pingresp, disconnect, auth>;

namespace detail {
template <class T, class Variant>
struct variant_index;
template <class T, class... Ts>
struct variant_index<T, std::variant<Ts...>> {
    static constexpr std::size_t value = [] {
        std::size_t index = 0;
        bool found = false;
        ((found = found || std::is_same_v<T, Ts>, index += found ? 0 : 1), ...);
        return index;
    }();
};
}  // namespace detail

// The packet type of an alternative, at compile time: packet_type_of<publish> == publish.
template <class T>
inline constexpr packet_type packet_type_of =
    static_cast<packet_type>(detail::variant_index<T, packet>::value + 1);

inline packet_type type_of(const packet& p) noexcept {
    return static_cast<packet_type>(p.index() + 1);
}

// "CONNECT", "PUBLISH", ... as the specification writes them.
std::string_view to_string(packet_type type) noexcept;

}  // namespace starling::mqtt
