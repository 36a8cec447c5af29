#include "mqtt/packet/subscribe.h"

#include "mqtt/packet/codec.h"
#include "mqtt/topic.h"

namespace starling::mqtt::detail {

bool decode_subscribe(reader& r, const decode_context& ctx, subscribe& out) {
    if (!r.u16(out.packet_id)) {
        return false;
    }
    if (out.packet_id == 0) {
        return r.fail(reason_code::malformed_packet, "packet identifier 0");  // MQTT-2.2.1-3
    }
    const bool v5 = is_v5(ctx.version);
    if (v5 && !decode_properties(r, property_scope::subscribe, out.properties)) {
        return false;
    }
    if (r.empty()) {
        return r.fail(reason_code::protocol_error, "no topic filter");  // MQTT-3.8.3-3
    }
    while (!r.empty()) {
        std::string_view filter;
        std::uint8_t options = 0;
        if (!r.utf8_view(filter) || !r.u8(options)) {
            return false;
        }
        // Reserved bits: 7-2 at 3.x (MQTT-3-8.3-4), 7-6 at v5 (MQTT-3.8.3-5).
        if ((options & (v5 ? 0xC0 : 0xFC)) != 0) {
            return r.fail(reason_code::malformed_packet, "reserved subscription option bits set");
        }
        const auto q = static_cast<std::uint8_t>(options & 0x03);
        if (q == 3) {
            // Malformed at 3.x (MQTT-3-8.3-4), a Protocol Error at v5 (section 3.8.3.1).
            return r.fail(v5 ? reason_code::protocol_error : reason_code::malformed_packet,
                          "subscription QoS 3");
        }
        subscription_options o;
        o.qos = static_cast<mqtt::qos>(q);
        if (v5) {
            o.no_local = (options & 0x04) != 0;
            o.retain_as_published = (options & 0x08) != 0;
            const auto rh = static_cast<std::uint8_t>((options >> 4) & 0x03);
            if (rh == 3) {
                return r.fail(reason_code::protocol_error, "retain handling 3");
            }
            o.retain_handling = static_cast<mqtt::retain_handling>(rh);
        }
        if (!is_valid_filter_syntax(filter)) {
            return r.fail(reason_code::topic_filter_invalid, "invalid topic filter");
        }
        if (o.no_local && is_shared(filter)) {
            return r.fail(reason_code::protocol_error,
                          "no local on a shared subscription");  // MQTT-3.8.3-4
        }
        out.subscriptions.push_back(subscription{std::string(filter), o});
    }
    return true;
}

std::size_t body_size(const subscribe& p, protocol_version v) noexcept {
    std::size_t size = 2;
    if (is_v5(v)) {
        size += properties_block_size(p.properties, property_scope::subscribe);
    }
    for (const subscription& s : p.subscriptions) {
        size += string_size(s.filter) + 1;
    }
    return size;
}

void encode_body(const subscribe& p, protocol_version v, std::string& out) {
    put_u16(out, p.packet_id);
    const bool v5 = is_v5(v);
    if (v5) {
        encode_properties(p.properties, property_scope::subscribe,
                          properties_size(p.properties, property_scope::subscribe), out);
    }
    for (const subscription& s : p.subscriptions) {
        put_string(out, s.filter);
        auto options = static_cast<std::uint8_t>(static_cast<std::uint8_t>(s.options.qos) & 0x03);
        if (v5) {
            if (s.options.no_local) {
                options |= 0x04;
            }
            if (s.options.retain_as_published) {
                options |= 0x08;
            }
            options |= static_cast<std::uint8_t>(
                (static_cast<std::uint8_t>(s.options.retain_handling) & 0x03) << 4);
        }
        put_u8(out, options);
    }
}

}  // namespace starling::mqtt::detail
