// Helpers shared by several packet types: the PUBACK/PUBREC/PUBREL/PUBCOMP layout and the
// table of reason codes each packet type may carry.

#include "mqtt/packet/codec.h"

#include <array>
#include <initializer_list>

namespace starling::mqtt::detail {

namespace {

// A set of reason code values, one bit per value.
struct code_set {
    std::array<std::uint64_t, 4> bits{};

    constexpr code_set(std::initializer_list<std::uint8_t> values) {
        for (std::uint8_t v : values) {
            bits[v / 64] |= std::uint64_t{1} << (v % 64);
        }
    }
    constexpr bool contains(std::uint8_t v) const noexcept {
        return (bits[v / 64] & (std::uint64_t{1} << (v % 64))) != 0;
    }
};

// MQTT 5.0 section 2.4, table 2-6, and the per-packet reason code tables of chapter 3.
constexpr code_set connack_codes = {0x00, 0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86,
                                    0x87, 0x88, 0x89, 0x8A, 0x8C, 0x90, 0x95, 0x97,
                                    0x99, 0x9A, 0x9B, 0x9C, 0x9D, 0x9F};
constexpr code_set puback_codes = {0x00, 0x10, 0x80, 0x83, 0x87, 0x90, 0x91, 0x97, 0x99};
constexpr code_set pubrel_codes = {0x00, 0x92};
constexpr code_set suback_codes = {0x00, 0x01, 0x02, 0x80, 0x83, 0x87,
                                   0x8F, 0x91, 0x97, 0x9E, 0xA1, 0xA2};
constexpr code_set unsuback_codes = {0x00, 0x11, 0x80, 0x83, 0x87, 0x8F, 0x91};
constexpr code_set disconnect_codes = {0x00, 0x04, 0x80, 0x81, 0x82, 0x83, 0x87, 0x89, 0x8B, 0x8D,
                                       0x8E, 0x8F, 0x90, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99,
                                       0x9A, 0x9B, 0x9C, 0x9D, 0x9E, 0x9F, 0xA0, 0xA1, 0xA2};
constexpr code_set auth_codes = {0x00, 0x18, 0x19};

constexpr property_scope ack_scope(packet_type type) noexcept {
    switch (type) {
        case packet_type::pubrec:
            return property_scope::pubrec;
        case packet_type::pubrel:
            return property_scope::pubrel;
        case packet_type::pubcomp:
            return property_scope::pubcomp;
        default:
            return property_scope::puback;
    }
}

}  // namespace

bool is_allowed_reason_code(packet_type type, reason_code code) noexcept {
    auto v = static_cast<std::uint8_t>(code);
    switch (type) {
        case packet_type::connack:
            return connack_codes.contains(v);
        case packet_type::puback:
        case packet_type::pubrec:
            return puback_codes.contains(v);
        case packet_type::pubrel:
        case packet_type::pubcomp:
            return pubrel_codes.contains(v);
        case packet_type::suback:
            return suback_codes.contains(v);
        case packet_type::unsuback:
            return unsuback_codes.contains(v);
        case packet_type::disconnect:
            return disconnect_codes.contains(v);
        case packet_type::auth:
            return auth_codes.contains(v);
        default:
            return false;
    }
}

bool decode_ack(reader& r, const decode_context& ctx, packet_type type, std::uint16_t& packet_id,
                reason_code& code, properties& props) {
    if (!r.u16(packet_id)) {
        return false;
    }
    if (packet_id == 0) {
        return r.fail(reason_code::malformed_packet, "packet identifier 0");
    }
    code = reason_code::success;
    if (!is_v5(ctx.version)) {
        if (!r.empty()) {
            return r.fail(reason_code::malformed_packet, "remaining length other than 2");
        }
        return true;
    }
    // v5: the reason code may be omitted when 0 and there are no properties; the property
    // length may be omitted when there are no properties (MQTT 5.0 section 3.4.2.1).
    if (r.empty()) {
        return true;
    }
    std::uint8_t raw = 0;
    if (!r.u8(raw)) {
        return false;
    }
    code = static_cast<reason_code>(raw);
    if (!is_allowed_reason_code(type, code)) {
        return r.fail(reason_code::malformed_packet, "reason code not allowed in this packet");
    }
    if (r.empty()) {
        return true;
    }
    if (!decode_properties(r, ack_scope(type), props)) {
        return false;
    }
    if (!r.empty()) {
        return r.fail(reason_code::malformed_packet, "bytes after the properties");
    }
    return true;
}

std::size_t ack_body_size(std::uint16_t /*packet_id*/, reason_code code, const properties& props,
                          property_scope scope, protocol_version v) noexcept {
    if (!is_v5(v)) {
        return 2;
    }
    std::size_t props_size = properties_size(props, scope);
    if (props_size == 0) {
        return code == reason_code::success ? 2 : 3;
    }
    return 3 + varint_size(static_cast<std::uint32_t>(props_size)) + props_size;
}

void encode_ack_body(std::uint16_t packet_id, reason_code code, const properties& props,
                     property_scope scope, protocol_version v, std::string& out) {
    put_u16(out, packet_id);
    if (!is_v5(v)) {
        return;
    }
    std::size_t props_size = properties_size(props, scope);
    if (props_size == 0) {
        if (code != reason_code::success) {
            put_u8(out, static_cast<std::uint8_t>(code));
        }
        return;
    }
    put_u8(out, static_cast<std::uint8_t>(code));
    encode_properties(props, scope, props_size, out);
}

}  // namespace starling::mqtt::detail
