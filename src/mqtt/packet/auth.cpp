#include "mqtt/packet/auth.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_auth(reader& r, const decode_context& /*ctx*/, auth& out) {
    out.reason_code = reason_code::success;
    // An empty AUTH is Success without properties (MQTT 5.0 section 3.15.2.1).
    if (r.empty()) {
        return true;
    }
    std::uint8_t raw = 0;
    r.u8(raw);
    out.reason_code = static_cast<reason_code>(raw);
    if (!is_allowed_reason_code(packet_type::auth, out.reason_code)) {
        return r.fail(reason_code::malformed_packet, "reason code not allowed in AUTH");
    }
    if (!r.empty()) {
        if (!decode_properties(r, property_scope::auth, out.properties)) {
            return false;
        }
        if (!r.empty()) {
            return r.fail(reason_code::malformed_packet, "bytes after the properties");
        }
    }
    if (!out.properties.authentication_method) {
        // MQTT 5.0 section 3.15.2.2.2.
        return r.fail(reason_code::protocol_error, "AUTH without authentication method");
    }
    return true;
}

std::size_t body_size(const auth& p, protocol_version /*v*/) noexcept {
    std::size_t props_size = properties_size(p.properties, property_scope::auth);
    if (props_size == 0 && p.reason_code == reason_code::success) {
        return 0;
    }
    return 1 + varint_size(static_cast<std::uint32_t>(props_size)) + props_size;
}

void encode_body(const auth& p, protocol_version /*v*/, std::string& out) {
    std::size_t props_size = properties_size(p.properties, property_scope::auth);
    if (props_size == 0 && p.reason_code == reason_code::success) {
        return;
    }
    put_u8(out, static_cast<std::uint8_t>(p.reason_code));
    encode_properties(p.properties, property_scope::auth, props_size, out);
}

}  // namespace starling::mqtt::detail
