#include "mqtt/packet/unsuback.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_unsuback(reader& r, const decode_context& ctx, unsuback& out) {
    if (!r.u16(out.packet_id)) {
        return false;
    }
    if (out.packet_id == 0) {
        return r.fail(reason_code::malformed_packet, "packet identifier 0");
    }
    if (!is_v5(ctx.version)) {
        if (!r.empty()) {
            return r.fail(reason_code::malformed_packet, "remaining length other than 2");
        }
        return true;
    }
    if (!decode_properties(r, property_scope::unsuback, out.properties)) {
        return false;
    }
    if (r.empty()) {
        return r.fail(reason_code::protocol_error, "no reason codes");
    }
    out.reason_codes.reserve(r.remaining());
    while (!r.empty()) {
        std::uint8_t raw = 0;
        r.u8(raw);
        if (!is_allowed_reason_code(packet_type::unsuback, static_cast<reason_code>(raw))) {
            return r.fail(reason_code::malformed_packet, "reason code not allowed in UNSUBACK");
        }
        out.reason_codes.push_back(static_cast<reason_code>(raw));
    }
    return true;
}

std::size_t body_size(const unsuback& p, protocol_version v) noexcept {
    if (!is_v5(v)) {
        return 2;
    }
    return 2 + properties_block_size(p.properties, property_scope::unsuback) +
           p.reason_codes.size();
}

void encode_body(const unsuback& p, protocol_version v, std::string& out) {
    put_u16(out, p.packet_id);
    if (!is_v5(v)) {
        return;
    }
    encode_properties(p.properties, property_scope::unsuback,
                      properties_size(p.properties, property_scope::unsuback), out);
    for (reason_code code : p.reason_codes) {
        put_u8(out, static_cast<std::uint8_t>(code));
    }
}

}  // namespace starling::mqtt::detail
