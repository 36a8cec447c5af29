#include "mqtt/packet/pubcomp.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_pubcomp(reader& r, const decode_context& ctx, pubcomp& out) {
    return decode_ack(r, ctx, packet_type::pubcomp, out.packet_id, out.reason_code, out.properties);
}

std::size_t body_size(const pubcomp& p, protocol_version v) noexcept {
    return ack_body_size(p.packet_id, p.reason_code, p.properties, property_scope::pubcomp, v);
}

void encode_body(const pubcomp& p, protocol_version v, std::string& out) {
    encode_ack_body(p.packet_id, p.reason_code, p.properties, property_scope::pubcomp, v, out);
}

}  // namespace starling::mqtt::detail
