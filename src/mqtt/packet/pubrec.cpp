#include "mqtt/packet/pubrec.h"

#include "mqtt/packet/codec.h"

namespace starling::mqtt::detail {

bool decode_pubrec(reader& r, const decode_context& ctx, pubrec& out) {
    return decode_ack(r, ctx, packet_type::pubrec, out.packet_id, out.reason_code, out.properties);
}

std::size_t body_size(const pubrec& p, protocol_version v) noexcept {
    return ack_body_size(p.packet_id, p.reason_code, p.properties, property_scope::pubrec, v);
}

void encode_body(const pubrec& p, protocol_version v, std::string& out) {
    encode_ack_body(p.packet_id, p.reason_code, p.properties, property_scope::pubrec, v, out);
}

}  // namespace starling::mqtt::detail
