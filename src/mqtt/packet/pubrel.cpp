#include "mqtt/packet/pubrel.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_pubrel(reader& r, const decode_context& ctx, pubrel& out) {
    return decode_ack(r, ctx, packet_type::pubrel, out.packet_id, out.reason_code, out.properties);
}

std::size_t body_size(const pubrel& p, protocol_version v) noexcept {
    return ack_body_size(p.packet_id, p.reason_code, p.properties, property_scope::pubrel, v);
}

void encode_body(const pubrel& p, protocol_version v, std::string& out) {
    encode_ack_body(p.packet_id, p.reason_code, p.properties, property_scope::pubrel, v, out);
}

}  // namespace starling::mqtt::detail
