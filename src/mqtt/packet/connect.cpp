#include "mqtt/packet/connect.h"

#include "mqtt/packet/codec.h"
#include "mqtt/topic.h"

namespace starling::mqtt::detail {

namespace {

constexpr std::uint8_t flag_reserved = 0x01;
constexpr std::uint8_t flag_clean_start = 0x02;
constexpr std::uint8_t flag_will = 0x04;
constexpr std::uint8_t flag_will_retain = 0x20;
constexpr std::uint8_t flag_password = 0x40;
constexpr std::uint8_t flag_username = 0x80;

constexpr std::string_view protocol_name(protocol_version v) noexcept {
    return v == protocol_version::v3_1 ? "MQIsdp" : "MQTT";
}

bool decode_will(reader& r, const decode_context& ctx, std::uint8_t flags, will_message& will) {
    if (is_v5(ctx.version) && !decode_properties(r, property_scope::will, will.properties)) {
        return false;
    }
    std::string_view topic;
    if (!r.utf8_view(topic)) {
        return false;
    }
    if (topic.empty() || has_wildcard(topic)) {
        return r.fail(reason_code::topic_name_invalid, "invalid will topic");
    }
    will.topic.assign(topic);
    if (!r.binary(will.payload)) {
        return false;
    }
    will.qos = static_cast<mqtt::qos>((flags >> 3) & 0x03);
    will.retain = (flags & flag_will_retain) != 0;
    if (ctx.validate_payload_format && will.properties.payload_format_indicator == 1 &&
        !is_well_formed_utf8(will.payload)) {
        return r.fail(reason_code::payload_format_invalid, "will payload is not UTF-8");
    }
    return true;
}

}  // namespace

bool decode_connect(reader& r, const decode_context& ctx_in, connect& out,
                    std::optional<protocol_version>& detected) {
    // Protocol Name and Level (MQTT 5.0 sections 3.1.2.1 and 3.1.2.2).
    std::string_view name;
    std::uint8_t level = 0;
    if (!r.raw_string(name) || !r.u8(level)) {
        return false;
    }
    protocol_version version;
    if (name == "MQTT" && (level == 4 || level == 5)) {
        version = static_cast<protocol_version>(level);
    } else if (name == "MQIsdp" && level == 3) {
        version = protocol_version::v3_1;
    } else {
        return r.fail(reason_code::unsupported_protocol_version,
                      "unsupported protocol name or level");
    }
    detected = version;
    out.protocol_version = version;
    decode_context ctx = ctx_in;
    ctx.version = version;

    // The fixed header flags of CONNECT are reserved (MQTT-2.1.3-1); 3.1 did not say so.
    if (version != protocol_version::v3_1 && ctx.flags != 0) {
        return r.fail(reason_code::malformed_packet, "reserved fixed-header flags");
    }

    std::uint8_t flags = 0;
    if (!r.u8(flags) || !r.u16(out.keep_alive)) {
        return false;
    }
    if ((flags & flag_reserved) != 0) {
        return r.fail(reason_code::malformed_packet, "reserved connect flag set");  // MQTT-3.1.2-3
    }
    const bool has_will = (flags & flag_will) != 0;
    const auto will_qos = static_cast<std::uint8_t>((flags >> 3) & 0x03);
    if (will_qos == 3) {
        return r.fail(reason_code::malformed_packet, "will QoS 3");  // MQTT-3.1.2-12
    }
    if (!has_will && (will_qos != 0 || (flags & flag_will_retain) != 0)) {
        // MQTT-3.1.2-11, MQTT-3.1.2-13 (5.0) / MQTT-3.1.2-13, -15 (3.1.1)
        return r.fail(reason_code::malformed_packet, "will QoS or retain set without will flag");
    }
    const bool has_username = (flags & flag_username) != 0;
    const bool has_password = (flags & flag_password) != 0;
    if (!is_v5(version) && has_password && !has_username) {
        return r.fail(reason_code::malformed_packet,
                      "password flag without user name flag");  // MQTT-3.1.2-22 (3.1.1)
    }
    out.clean_start = (flags & flag_clean_start) != 0;

    if (is_v5(version)) {
        if (!decode_properties(r, property_scope::connect, out.properties)) {
            return false;
        }
        if (out.properties.authentication_data && !out.properties.authentication_method) {
            return r.fail(reason_code::protocol_error,
                          "authentication data without authentication method");
        }
    }

    // Payload (MQTT 5.0 section 3.1.3): client id, will, user name, password.
    if (!r.utf8(out.client_id)) {
        return false;
    }
    if (out.client_id.empty()) {
        // 3.1 requires 1 to 23 characters; 3.1.1 allows an empty id only with a clean session
        // (MQTT-3.1.3-8). v5 allows it (the server assigns one).
        if (version == protocol_version::v3_1 ||
            (version == protocol_version::v3_1_1 && !out.clean_start)) {
            return r.fail(reason_code::client_identifier_not_valid, "empty client identifier");
        }
    }
    if (has_will) {
        if (!decode_will(r, ctx, flags, out.will.emplace())) {
            return false;
        }
    }
    if (has_username) {
        if (!r.utf8(out.username.emplace())) {
            return false;
        }
    }
    if (has_password) {
        if (!r.binary(out.password.emplace())) {
            return false;
        }
    }
    if (!r.empty()) {
        return r.fail(reason_code::malformed_packet, "bytes after the payload");
    }
    return true;
}

std::size_t body_size(const connect& p, protocol_version v) noexcept {
    std::size_t size = string_size(protocol_name(v)) + 1 + 1 + 2;
    if (is_v5(v)) {
        size += properties_block_size(p.properties, property_scope::connect);
    }
    size += string_size(p.client_id);
    if (p.will) {
        if (is_v5(v)) {
            size += properties_block_size(p.will->properties, property_scope::will);
        }
        size += string_size(p.will->topic) + string_size(p.will->payload);
    }
    if (p.username) {
        size += string_size(*p.username);
    }
    if (p.password) {
        size += string_size(*p.password);
    }
    return size;
}

void encode_body(const connect& p, protocol_version v, std::string& out) {
    put_string(out, protocol_name(v));
    put_u8(out, static_cast<std::uint8_t>(v));
    std::uint8_t flags = 0;
    if (p.clean_start) {
        flags |= flag_clean_start;
    }
    if (p.will) {
        flags |= flag_will;
        flags |= static_cast<std::uint8_t>((static_cast<std::uint8_t>(p.will->qos) & 0x03) << 3);
        if (p.will->retain) {
            flags |= flag_will_retain;
        }
    }
    if (p.username) {
        flags |= flag_username;
    }
    if (p.password) {
        flags |= flag_password;
    }
    put_u8(out, flags);
    put_u16(out, p.keep_alive);
    if (is_v5(v)) {
        encode_properties(p.properties, property_scope::connect,
                          properties_size(p.properties, property_scope::connect), out);
    }
    put_string(out, p.client_id);
    if (p.will) {
        if (is_v5(v)) {
            encode_properties(p.will->properties, property_scope::will,
                              properties_size(p.will->properties, property_scope::will), out);
        }
        put_string(out, p.will->topic);
        put_string(out, p.will->payload);
    }
    if (p.username) {
        put_string(out, *p.username);
    }
    if (p.password) {
        put_string(out, *p.password);
    }
}

}  // namespace starling::mqtt::detail
