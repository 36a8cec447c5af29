#include "mqtt/packet/connack.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_connack(reader& r, const decode_context& ctx, connack& out) {
    std::uint8_t flags = 0;
    std::uint8_t code = 0;
    if (!r.u8(flags) || !r.u8(code)) {
        return false;
    }
    if (ctx.version == protocol_version::v3_1) {
        // 3.1 has no Session Present flag; its first byte is unused.
        flags = 0;
    }
    if ((flags & 0xFE) != 0) {
        return r.fail(reason_code::malformed_packet, "reserved acknowledge flags set");
    }
    out.session_present = (flags & 0x01) != 0;
    if (!is_v5(ctx.version)) {
        if (code > static_cast<std::uint8_t>(connect_return_code::not_authorized)) {
            return r.fail(reason_code::malformed_packet, "reserved connect return code");
        }
        out.reason_code = to_reason_code(static_cast<connect_return_code>(code));
        if (out.session_present && code != 0) {
            // MQTT-3.2.2-4 (3.1.1)
            return r.fail(reason_code::malformed_packet, "session present with a refusal");
        }
        if (!r.empty()) {
            return r.fail(reason_code::malformed_packet, "remaining length other than 2");
        }
        return true;
    }
    out.reason_code = static_cast<reason_code>(code);
    if (!is_allowed_reason_code(packet_type::connack, out.reason_code)) {
        return r.fail(reason_code::malformed_packet, "reason code not allowed in CONNACK");
    }
    if (out.session_present && is_error(out.reason_code)) {
        // MQTT-3.2.2-6 (5.0)
        return r.fail(reason_code::protocol_error, "session present with a failure reason code");
    }
    if (!decode_properties(r, property_scope::connack, out.properties)) {
        return false;
    }
    if (!r.empty()) {
        return r.fail(reason_code::malformed_packet, "bytes after the properties");
    }
    return true;
}

std::size_t body_size(const connack& p, protocol_version v) noexcept {
    if (!is_v5(v)) {
        return 2;
    }
    return 2 + properties_block_size(p.properties, property_scope::connack);
}

void encode_body(const connack& p, protocol_version v, std::string& out) {
    // A refusal never carries Session Present (MQTT-3.2.2-4 / -6).
    bool session_present = p.session_present && p.reason_code == reason_code::success;
    put_u8(out, v != protocol_version::v3_1 && session_present ? 1 : 0);
    if (!is_v5(v)) {
        put_u8(out, static_cast<std::uint8_t>(to_connect_return_code(p.reason_code)));
        return;
    }
    put_u8(out, static_cast<std::uint8_t>(p.reason_code));
    encode_properties(p.properties, property_scope::connack,
                      properties_size(p.properties, property_scope::connack), out);
}

}  // namespace starling::mqtt::detail
