#include "mqtt/packet/disconnect.h"

#include "mqtt/decoder.h"
#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_disconnect(reader& r, const decode_context& ctx, disconnect& out) {
    out.reason_code = reason_code::normal_disconnection;
    if (!is_v5(ctx.version)) {
        if (!r.empty()) {
            return r.fail(reason_code::malformed_packet, "remaining length other than 0");
        }
        return true;
    }
    // Reason code and property length may each be omitted (MQTT 5.0 section 3.14.2).
    if (r.empty()) {
        return true;
    }
    std::uint8_t raw = 0;
    r.u8(raw);
    out.reason_code = static_cast<reason_code>(raw);
    if (!is_allowed_reason_code(packet_type::disconnect, out.reason_code)) {
        return r.fail(reason_code::malformed_packet, "reason code not allowed in DISCONNECT");
    }
    if (r.empty()) {
        return true;
    }
    if (!decode_properties(r, property_scope::disconnect, out.properties)) {
        return false;
    }
    if (!r.empty()) {
        return r.fail(reason_code::malformed_packet, "bytes after the properties");
    }
    if (ctx.role == decoder_role::client && out.properties.session_expiry_interval) {
        return r.fail(reason_code::protocol_error,
                      "session expiry interval in a DISCONNECT from the server");  // 3.14.2-2
    }
    return true;
}

std::size_t body_size(const disconnect& p, protocol_version v) noexcept {
    if (!is_v5(v)) {
        return 0;
    }
    std::size_t props_size = properties_size(p.properties, property_scope::disconnect);
    if (props_size == 0) {
        return p.reason_code == reason_code::normal_disconnection ? 0 : 1;
    }
    return 1 + varint_size(static_cast<std::uint32_t>(props_size)) + props_size;
}

void encode_body(const disconnect& p, protocol_version v, std::string& out) {
    if (!is_v5(v)) {
        return;
    }
    std::size_t props_size = properties_size(p.properties, property_scope::disconnect);
    if (props_size == 0) {
        if (p.reason_code != reason_code::normal_disconnection) {
            put_u8(out, static_cast<std::uint8_t>(p.reason_code));
        }
        return;
    }
    put_u8(out, static_cast<std::uint8_t>(p.reason_code));
    encode_properties(p.properties, property_scope::disconnect, props_size, out);
}

}  // namespace starling::mqtt::detail
