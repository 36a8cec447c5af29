#include "mqtt/packet/puback.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_puback(reader& r, const decode_context& ctx, puback& out) {
    return decode_ack(r, ctx, packet_type::puback, out.packet_id, out.reason_code, out.properties);
}

std::size_t body_size(const puback& p, protocol_version v) noexcept {
    return ack_body_size(p.packet_id, p.reason_code, p.properties, property_scope::puback, v);
}

void encode_body(const puback& p, protocol_version v, std::string& out) {
    encode_ack_body(p.packet_id, p.reason_code, p.properties, property_scope::puback, v, out);
}

}  // namespace starling::mqtt::detail
