#pragma once

// Internal to the codec: reading and writing a v5 property list (MQTT 5.0 section 2.2.2) for a
// given packet type. Which properties a packet may carry is a table (one bit per identifier);
// the decoder enforces it (a property not valid for the packet type is malformed_packet) and the
// value rules the specification states for each property, the encoder silently skips what the
// packet type does not allow.

#include "mqtt/properties.h"
#include "mqtt/wire.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace starling::mqtt::detail {

// Where a property list appears: a packet type, or the will properties inside CONNECT.
enum class property_scope : std::uint8_t {
    connect,
    connack,
    publish,
    puback,
    pubrec,
    pubrel,
    pubcomp,
    subscribe,
    suback,
    unsubscribe,
    unsuback,
    disconnect,
    auth,
    will,
};

// Per-subscriber additions to a PUBLISH's properties (see encoder.h publish_header): extra
// subscription identifiers, and the topic alias, which replaces properties.topic_alias.
struct publish_overrides {
    std::span<const std::uint32_t> subscription_identifiers;
    std::optional<std::uint16_t> topic_alias;
};

// Reads Property Length and the properties into `out` (which must be empty). On failure the
// reader holds the reason.
bool decode_properties(reader& r, property_scope scope, properties& out);

// Size of the encoded property list without its length prefix.
std::size_t properties_size(const properties& p, property_scope scope,
                            const publish_overrides* overrides = nullptr) noexcept;

// Size including the Property Length prefix.
inline std::size_t properties_block_size(const properties& p, property_scope scope,
                                         const publish_overrides* overrides = nullptr) noexcept {
    std::size_t size = properties_size(p, scope, overrides);
    return varint_size(static_cast<std::uint32_t>(size)) + size;
}

// Writes Property Length (`size` from properties_size) and the properties.
void encode_properties(const properties& p, property_scope scope, std::size_t size,
                       std::string& out, const publish_overrides* overrides = nullptr);

}  // namespace starling::mqtt::detail
