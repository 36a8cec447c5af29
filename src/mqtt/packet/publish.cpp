#include "mqtt/packet/publish.h"

#include "mqtt/decoder.h"
#include "mqtt/packet/codec.h"
#include "mqtt/topic.h"

namespace starling::mqtt::detail {

namespace {

constexpr std::uint8_t flag_retain = 0x01;
constexpr std::uint8_t flag_dup = 0x08;

}  // namespace

bool decode_publish(reader& r, const decode_context& ctx, publish& out) {
    const auto q = static_cast<std::uint8_t>((ctx.flags >> 1) & 0x03);
    if (q == 3) {
        return r.fail(reason_code::malformed_packet, "QoS 3");  // MQTT-3.3.1-4
    }
    out.qos = static_cast<mqtt::qos>(q);
    out.retain = (ctx.flags & flag_retain) != 0;
    out.dup = (ctx.flags & flag_dup) != 0;
    if (out.dup && q == 0 && ctx.version != protocol_version::v3_1) {
        return r.fail(reason_code::malformed_packet, "DUP set on a QoS 0 message");  // MQTT-3.3.1-2
    }

    std::string_view topic;
    if (!r.utf8_view(topic)) {
        return false;
    }
    if (has_wildcard(topic)) {
        return r.fail(reason_code::topic_name_invalid, "wildcard in topic name");  // MQTT-3.3.2-2
    }
    if (q != 0) {
        if (!r.u16(out.packet_id)) {
            return false;
        }
        if (out.packet_id == 0) {
            return r.fail(reason_code::malformed_packet, "packet identifier 0");  // MQTT-2.2.1-3
        }
    }
    if (is_v5(ctx.version)) {
        if (!decode_properties(r, property_scope::publish, out.properties)) {
            return false;
        }
        if (ctx.role == decoder_role::server && !out.properties.subscription_identifiers.empty()) {
            return r.fail(reason_code::protocol_error,
                          "subscription identifier in a PUBLISH from a client");  // MQTT-3.3.4-6
        }
        if (topic.empty() && !out.properties.topic_alias) {
            return r.fail(reason_code::protocol_error, "empty topic name without topic alias");
        }
    } else if (topic.empty()) {
        return r.fail(reason_code::topic_name_invalid, "empty topic name");  // MQTT-4.7.3-1
    }
    out.topic.assign(topic);
    r.rest(out.payload);
    if (ctx.validate_payload_format && out.properties.payload_format_indicator == 1 &&
        !is_well_formed_utf8(out.payload)) {
        return r.fail(reason_code::payload_format_invalid, "payload is not UTF-8");
    }
    return true;
}

std::uint8_t publish_flags(const publish_header& h) noexcept {
    auto flags = static_cast<std::uint8_t>((static_cast<std::uint8_t>(h.qos) & 0x03) << 1);
    if (h.retain) {
        flags |= flag_retain;
    }
    if (h.dup && h.qos != mqtt::qos::at_most_once) {
        flags |= flag_dup;
    }
    return flags;
}

namespace {

const properties& properties_of(const publish_header& h) noexcept {
    static const properties none;
    return h.properties != nullptr ? *h.properties : none;
}

}  // namespace

std::size_t publish_properties_size(protocol_version v, const publish_header& h) noexcept {
    if (!is_v5(v)) {
        return 0;
    }
    publish_overrides ov{h.subscription_identifiers, h.topic_alias};
    return properties_size(properties_of(h), property_scope::publish, &ov);
}

std::size_t publish_body_size(protocol_version v, const publish_header& h,
                              std::size_t properties_size, std::size_t payload_size) noexcept {
    std::size_t size = string_size(h.topic) + payload_size;
    if (h.qos != mqtt::qos::at_most_once) {
        size += 2;
    }
    if (is_v5(v)) {
        size += varint_size(static_cast<std::uint32_t>(properties_size)) + properties_size;
    }
    return size;
}

void encode_publish_body(protocol_version v, const publish_header& h, std::size_t properties_size,
                         std::string_view payload, std::string& out) {
    put_string(out, h.topic);
    if (h.qos != mqtt::qos::at_most_once) {
        put_u16(out, h.packet_id);
    }
    if (is_v5(v)) {
        publish_overrides ov{h.subscription_identifiers, h.topic_alias};
        encode_properties(properties_of(h), property_scope::publish, properties_size, out, &ov);
    }
    out.append(payload);
}

}  // namespace starling::mqtt::detail
