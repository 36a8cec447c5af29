#include "mqtt/packet/unsubscribe.h"

#include "mqtt/packet/codec.h"
#include "mqtt/topic.h"

namespace starling::mqtt::detail {

bool decode_unsubscribe(reader& r, const decode_context& ctx, unsubscribe& out) {
    if (!r.u16(out.packet_id)) {
        return false;
    }
    if (out.packet_id == 0) {
        return r.fail(reason_code::malformed_packet, "packet identifier 0");  // MQTT-2.2.1-3
    }
    if (is_v5(ctx.version) && !decode_properties(r, property_scope::unsubscribe, out.properties)) {
        return false;
    }
    if (r.empty()) {
        return r.fail(reason_code::protocol_error, "no topic filter");  // MQTT-3.10.3-2
    }
    while (!r.empty()) {
        std::string_view filter;
        if (!r.utf8_view(filter)) {
            return false;
        }
        if (!is_valid_filter_syntax(filter)) {
            return r.fail(reason_code::topic_filter_invalid, "invalid topic filter");
        }
        out.filters.emplace_back(filter);
    }
    return true;
}

std::size_t body_size(const unsubscribe& p, protocol_version v) noexcept {
    std::size_t size = 2;
    if (is_v5(v)) {
        size += properties_block_size(p.properties, property_scope::unsubscribe);
    }
    for (const std::string& f : p.filters) {
        size += string_size(f);
    }
    return size;
}

void encode_body(const unsubscribe& p, protocol_version v, std::string& out) {
    put_u16(out, p.packet_id);
    if (is_v5(v)) {
        encode_properties(p.properties, property_scope::unsubscribe,
                          properties_size(p.properties, property_scope::unsubscribe), out);
    }
    for (const std::string& f : p.filters) {
        put_string(out, f);
    }
}

}  // namespace starling::mqtt::detail
