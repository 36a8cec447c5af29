#pragma once

// Internal to the codec: the per-packet-type body codecs, implemented in packet/<type>.cpp.
// The decoder has already parsed the fixed header and hands each function a reader over
// exactly the Remaining Length bytes; a function fails if anything is left over. Encoders
// write only the variable header and payload; encoder.cpp writes the fixed header.

#include "mqtt/encoder.h"
#include "mqtt/packet.h"
#include "mqtt/property_codec.h"
#include "mqtt/wire.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace starling::mqtt::detail {

// CONNECT is decoded before the version is known: `detected` is set as soon as the protocol
// name and level are valid, even if a later part of the packet fails, so the caller can answer
// with a CONNACK of the right version.
bool decode_connect(reader& r, const decode_context& ctx, connect& out,
                    std::optional<protocol_version>& detected);
bool decode_connack(reader& r, const decode_context& ctx, connack& out);
bool decode_publish(reader& r, const decode_context& ctx, publish& out);
bool decode_puback(reader& r, const decode_context& ctx, puback& out);
bool decode_pubrec(reader& r, const decode_context& ctx, pubrec& out);
bool decode_pubrel(reader& r, const decode_context& ctx, pubrel& out);
bool decode_pubcomp(reader& r, const decode_context& ctx, pubcomp& out);
bool decode_subscribe(reader& r, const decode_context& ctx, subscribe& out);
bool decode_suback(reader& r, const decode_context& ctx, suback& out);
bool decode_unsubscribe(reader& r, const decode_context& ctx, unsubscribe& out);
bool decode_unsuback(reader& r, const decode_context& ctx, unsuback& out);
bool decode_pingreq(reader& r, const decode_context& ctx, pingreq& out);
bool decode_pingresp(reader& r, const decode_context& ctx, pingresp& out);
bool decode_disconnect(reader& r, const decode_context& ctx, disconnect& out);
bool decode_auth(reader& r, const decode_context& ctx, auth& out);

// Body (variable header + payload) sizes and writers. body_size() is exact: encode_body()
// appends precisely that many bytes.
std::size_t body_size(const connect& p, protocol_version v) noexcept;
std::size_t body_size(const connack& p, protocol_version v) noexcept;
std::size_t body_size(const puback& p, protocol_version v) noexcept;
std::size_t body_size(const pubrec& p, protocol_version v) noexcept;
std::size_t body_size(const pubrel& p, protocol_version v) noexcept;
std::size_t body_size(const pubcomp& p, protocol_version v) noexcept;
std::size_t body_size(const subscribe& p, protocol_version v) noexcept;
std::size_t body_size(const suback& p, protocol_version v) noexcept;
std::size_t body_size(const unsubscribe& p, protocol_version v) noexcept;
std::size_t body_size(const unsuback& p, protocol_version v) noexcept;
std::size_t body_size(const pingreq& p, protocol_version v) noexcept;
std::size_t body_size(const pingresp& p, protocol_version v) noexcept;
std::size_t body_size(const disconnect& p, protocol_version v) noexcept;
std::size_t body_size(const auth& p, protocol_version v) noexcept;

void encode_body(const connect& p, protocol_version v, std::string& out);
void encode_body(const connack& p, protocol_version v, std::string& out);
void encode_body(const puback& p, protocol_version v, std::string& out);
void encode_body(const pubrec& p, protocol_version v, std::string& out);
void encode_body(const pubrel& p, protocol_version v, std::string& out);
void encode_body(const pubcomp& p, protocol_version v, std::string& out);
void encode_body(const subscribe& p, protocol_version v, std::string& out);
void encode_body(const suback& p, protocol_version v, std::string& out);
void encode_body(const unsubscribe& p, protocol_version v, std::string& out);
void encode_body(const unsuback& p, protocol_version v, std::string& out);
void encode_body(const pingreq& p, protocol_version v, std::string& out);
void encode_body(const pingresp& p, protocol_version v, std::string& out);
void encode_body(const disconnect& p, protocol_version v, std::string& out);
void encode_body(const auth& p, protocol_version v, std::string& out);

// PUBLISH is encoded from a publish_header and a separate payload (see encoder.h).
// Size of the property list (without its length prefix); 0 before v5. Computed once per
// encode and passed to both functions below.
std::size_t publish_properties_size(protocol_version v, const publish_header& h) noexcept;
std::size_t publish_body_size(protocol_version v, const publish_header& h,
                              std::size_t properties_size, std::size_t payload_size) noexcept;
void encode_publish_body(protocol_version v, const publish_header& h, std::size_t properties_size,
                         std::string_view payload, std::string& out);
std::uint8_t publish_flags(const publish_header& h) noexcept;

// Fixed-header flags of every packet type but PUBLISH (MQTT 5.0 section 2.1.3).
constexpr std::uint8_t required_flags(packet_type type) noexcept {
    switch (type) {
        case packet_type::pubrel:
        case packet_type::subscribe:
        case packet_type::unsubscribe:
            return 0x02;
        default:
            return 0x00;
    }
}

// Shared by PUBACK, PUBREC, PUBREL and PUBCOMP, which have the same layout (implemented in
// packet/codec.cpp).
bool decode_ack(reader& r, const decode_context& ctx, packet_type type, std::uint16_t& packet_id,
                reason_code& code, properties& props);
std::size_t ack_body_size(std::uint16_t packet_id, reason_code code, const properties& props,
                          property_scope scope, protocol_version v) noexcept;
void encode_ack_body(std::uint16_t packet_id, reason_code code, const properties& props,
                     property_scope scope, protocol_version v, std::string& out);

// Is `code` one the specification allows in this packet type (v5)?
bool is_allowed_reason_code(packet_type type, reason_code code) noexcept;

}  // namespace starling::mqtt::detail
