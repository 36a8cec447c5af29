#pragma once

// MQTT encoder: appends the wire form of a packet to a caller-owned, reusable std::string.
// Nothing is allocated except growth of `out` (which is reserved to the exact size first).
//
// At 3.x, v5-only content (properties, reason codes beyond the v3 return codes) is not written;
// at v5, properties the specification does not allow in the packet type are not written
// either, so the encoder never produces a packet the decoder would reject for that reason.
// AUTH has no 3.x form: encoding it at 3.x writes nothing (and reports a bug).
//
// encoded_size() gives the exact byte count encode() would append, so the broker can check a
// client's Maximum Packet Size before sending.
//
// The caller is responsible for what only it knows: packet ids of 0 where one is required,
// strings over 65535 bytes (reported as a bug and truncated), topic validity.

#include "mqtt/packet.h"
#include "mqtt/properties.h"
#include "mqtt/protocol_version.h"
#include "mqtt/qos.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace starling::mqtt {

void encode(const packet& p, protocol_version version, std::string& out);
std::size_t encoded_size(const packet& p, protocol_version version);

// Per-type overloads: no need to build a `packet` variant (and copy a payload into it).
void encode(const connect& p, protocol_version version, std::string& out);
void encode(const connack& p, protocol_version version, std::string& out);
void encode(const publish& p, protocol_version version, std::string& out);
void encode(const puback& p, protocol_version version, std::string& out);
void encode(const pubrec& p, protocol_version version, std::string& out);
void encode(const pubrel& p, protocol_version version, std::string& out);
void encode(const pubcomp& p, protocol_version version, std::string& out);
void encode(const subscribe& p, protocol_version version, std::string& out);
void encode(const suback& p, protocol_version version, std::string& out);
void encode(const unsubscribe& p, protocol_version version, std::string& out);
void encode(const unsuback& p, protocol_version version, std::string& out);
void encode(const pingreq& p, protocol_version version, std::string& out);
void encode(const pingresp& p, protocol_version version, std::string& out);
void encode(const disconnect& p, protocol_version version, std::string& out);
void encode(const auth& p, protocol_version version, std::string& out);

// PUBLISH without owning its topic, payload or properties: the broker encodes one stored
// message for many subscribers, each with its own packet id, QoS, retain flag, subscription
// identifiers and topic alias.
struct publish_header {
    std::string_view topic;  // empty only with a topic alias (v5)
    mqtt::qos qos = mqtt::qos::at_most_once;
    bool retain = false;
    bool dup = false;
    std::uint16_t packet_id = 0;  // written only for QoS 1 and 2
    // The message's properties (may be null). Their subscription identifiers are written;
    // their topic alias is not (it belonged to the publisher's connection).
    const mqtt::properties* properties = nullptr;
    // Per-subscriber subscription identifiers, written after those in `properties`.
    std::span<const std::uint32_t> subscription_identifiers;
    // The topic alias for this connection, if any: the only one written.
    std::optional<std::uint16_t> topic_alias;
};

void encode_publish(std::string& out, protocol_version version, const publish_header& header,
                    std::string_view payload);
std::size_t encoded_publish_size(protocol_version version, const publish_header& header,
                                 std::size_t payload_size);

}  // namespace starling::mqtt
