#include "mqtt/packet/suback.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

namespace {

// v3 SUBACK return codes: granted QoS 0..2, or 0x80 failure (3.1.1; 3.1 had no failure code).
constexpr std::uint8_t v3_failure = 0x80;

std::uint8_t to_v3_code(reason_code code) noexcept {
    auto v = static_cast<std::uint8_t>(code);
    return v <= 2 ? v : v3_failure;
}

}  // namespace

bool decode_suback(reader& r, const decode_context& ctx, suback& out) {
    if (!r.u16(out.packet_id)) {
        return false;
    }
    if (out.packet_id == 0) {
        return r.fail(reason_code::malformed_packet, "packet identifier 0");
    }
    const bool v5 = is_v5(ctx.version);
    if (v5 && !decode_properties(r, property_scope::suback, out.properties)) {
        return false;
    }
    if (r.empty()) {
        return r.fail(reason_code::protocol_error, "no reason codes");
    }
    out.reason_codes.reserve(r.remaining());
    while (!r.empty()) {
        std::uint8_t raw = 0;
        r.u8(raw);
        if (v5) {
            if (!is_allowed_reason_code(packet_type::suback, static_cast<reason_code>(raw))) {
                return r.fail(reason_code::malformed_packet, "reason code not allowed in SUBACK");
            }
            out.reason_codes.push_back(static_cast<reason_code>(raw));
        } else {
            if (raw > 2 && raw != v3_failure) {
                return r.fail(reason_code::malformed_packet, "reserved SUBACK return code");
            }
            out.reason_codes.push_back(raw == v3_failure ? reason_code::unspecified_error
                                                         : static_cast<reason_code>(raw));
        }
    }
    return true;
}

std::size_t body_size(const suback& p, protocol_version v) noexcept {
    std::size_t size = 2 + p.reason_codes.size();
    if (is_v5(v)) {
        size += properties_block_size(p.properties, property_scope::suback);
    }
    return size;
}

void encode_body(const suback& p, protocol_version v, std::string& out) {
    put_u16(out, p.packet_id);
    if (is_v5(v)) {
        encode_properties(p.properties, property_scope::suback,
                          properties_size(p.properties, property_scope::suback), out);
        for (reason_code code : p.reason_codes) {
            put_u8(out, static_cast<std::uint8_t>(code));
        }
        return;
    }
    for (reason_code code : p.reason_codes) {
        put_u8(out, to_v3_code(code));
    }
}

}  // namespace starling::mqtt::detail
