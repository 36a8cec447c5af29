#include "mqtt/property_codec.h"

#include "mqtt/topic.h"

#include <array>

namespace starling::mqtt::detail {

namespace {

using id = property_id;

constexpr std::uint64_t bit(property_id pid) noexcept {
    return std::uint64_t{1} << static_cast<unsigned>(pid);
}

template <class... Ids>
constexpr std::uint64_t mask(Ids... ids) noexcept {
    return (bit(ids) | ...);
}

constexpr std::uint64_t known_properties =
    mask(id::payload_format_indicator, id::message_expiry_interval, id::content_type,
         id::response_topic, id::correlation_data, id::subscription_identifier,
         id::session_expiry_interval, id::assigned_client_identifier, id::server_keep_alive,
         id::authentication_method, id::authentication_data, id::request_problem_information,
         id::will_delay_interval, id::request_response_information, id::response_information,
         id::server_reference, id::reason_string, id::receive_maximum, id::topic_alias_maximum,
         id::topic_alias, id::maximum_qos, id::retain_available, id::user_property,
         id::maximum_packet_size, id::wildcard_subscription_available,
         id::subscription_identifier_available, id::shared_subscription_available);

constexpr std::uint64_t ack_properties = mask(id::reason_string, id::user_property);

// Which properties each scope allows (MQTT 5.0 section 2.2.2.2, table 2-4).
constexpr std::array<std::uint64_t, 14> allowed_by_scope = {
    // connect
    mask(id::session_expiry_interval, id::authentication_method, id::authentication_data,
         id::request_problem_information, id::request_response_information, id::receive_maximum,
         id::topic_alias_maximum, id::user_property, id::maximum_packet_size),
    // connack
    mask(id::session_expiry_interval, id::assigned_client_identifier, id::server_keep_alive,
         id::authentication_method, id::authentication_data, id::response_information,
         id::server_reference, id::reason_string, id::receive_maximum, id::topic_alias_maximum,
         id::maximum_qos, id::retain_available, id::user_property, id::maximum_packet_size,
         id::wildcard_subscription_available, id::subscription_identifier_available,
         id::shared_subscription_available),
    // publish
    mask(id::payload_format_indicator, id::message_expiry_interval, id::content_type,
         id::response_topic, id::correlation_data, id::subscription_identifier, id::topic_alias,
         id::user_property),
    ack_properties,  // puback
    ack_properties,  // pubrec
    ack_properties,  // pubrel
    ack_properties,  // pubcomp
    // subscribe
    mask(id::subscription_identifier, id::user_property),
    ack_properties,  // suback
    // unsubscribe
    mask(id::user_property),
    ack_properties,  // unsuback
    // disconnect
    mask(id::session_expiry_interval, id::server_reference, id::reason_string, id::user_property),
    // auth
    mask(id::authentication_method, id::authentication_data, id::reason_string, id::user_property),
    // will
    mask(id::payload_format_indicator, id::message_expiry_interval, id::content_type,
         id::response_topic, id::correlation_data, id::will_delay_interval, id::user_property),
};

constexpr std::uint64_t allowed(property_scope scope) noexcept {
    return allowed_by_scope[static_cast<std::size_t>(scope)];
}

struct varint_value {
    std::uint32_t value;
};

// Calls f(property_id, value) for every property present and allowed in the scope, in
// identifier order. Shared by sizing and writing so the two can never disagree.
template <class F>
void visit_properties(const properties& p, property_scope scope, const publish_overrides* ov,
                      F&& f) {
    const std::uint64_t ok = allowed(scope);
    auto want = [ok](property_id pid) { return (ok & bit(pid)) != 0; };
    auto opt = [&](property_id pid, const auto& field) {
        if (field && want(pid)) {
            f(pid, *field);
        }
    };
    auto opt_string = [&](property_id pid, const std::optional<std::string>& field) {
        if (field && want(pid)) {
            f(pid, std::string_view(*field));
        }
    };
    opt(id::payload_format_indicator, p.payload_format_indicator);
    opt(id::message_expiry_interval, p.message_expiry_interval);
    opt_string(id::content_type, p.content_type);
    opt_string(id::response_topic, p.response_topic);
    opt_string(id::correlation_data, p.correlation_data);
    if (want(id::subscription_identifier)) {
        for (std::uint32_t sid : p.subscription_identifiers) {
            f(id::subscription_identifier, varint_value{sid});
        }
        if (ov != nullptr) {
            for (std::uint32_t sid : ov->subscription_identifiers) {
                f(id::subscription_identifier, varint_value{sid});
            }
        }
    }
    opt(id::session_expiry_interval, p.session_expiry_interval);
    opt_string(id::assigned_client_identifier, p.assigned_client_identifier);
    opt(id::server_keep_alive, p.server_keep_alive);
    opt_string(id::authentication_method, p.authentication_method);
    opt_string(id::authentication_data, p.authentication_data);
    opt(id::request_problem_information, p.request_problem_information);
    opt(id::will_delay_interval, p.will_delay_interval);
    opt(id::request_response_information, p.request_response_information);
    opt_string(id::response_information, p.response_information);
    opt_string(id::server_reference, p.server_reference);
    opt_string(id::reason_string, p.reason_string);
    opt(id::receive_maximum, p.receive_maximum);
    opt(id::topic_alias_maximum, p.topic_alias_maximum);
    // With overrides (encode_publish) only the per-connection alias is written: an alias in
    // the stored message's properties belonged to the publisher's connection.
    opt(id::topic_alias, ov != nullptr ? ov->topic_alias : p.topic_alias);
    opt(id::maximum_qos, p.maximum_qos);
    opt(id::retain_available, p.retain_available);
    if (want(id::user_property)) {
        for (const user_property& up : p.user_properties) {
            f(id::user_property, up);
        }
    }
    opt(id::maximum_packet_size, p.maximum_packet_size);
    opt(id::wildcard_subscription_available, p.wildcard_subscription_available);
    opt(id::subscription_identifier_available, p.subscription_identifier_available);
    opt(id::shared_subscription_available, p.shared_subscription_available);
}

struct sizer {
    std::size_t size = 0;
    // Every identifier is below 128: one byte.
    void operator()(property_id, std::uint8_t) noexcept { size += 2; }
    void operator()(property_id, std::uint16_t) noexcept { size += 3; }
    void operator()(property_id, std::uint32_t) noexcept { size += 5; }
    void operator()(property_id, varint_value v) noexcept { size += 1 + varint_size(v.value); }
    void operator()(property_id, std::string_view s) noexcept { size += 1 + string_size(s); }
    void operator()(property_id, const user_property& up) noexcept {
        size += 1 + string_size(up.first) + string_size(up.second);
    }
};

struct writer {
    std::string& out;
    void operator()(property_id pid, std::uint8_t v) {
        put_u8(out, static_cast<std::uint8_t>(pid));
        put_u8(out, v);
    }
    void operator()(property_id pid, std::uint16_t v) {
        put_u8(out, static_cast<std::uint8_t>(pid));
        put_u16(out, v);
    }
    void operator()(property_id pid, std::uint32_t v) {
        put_u8(out, static_cast<std::uint8_t>(pid));
        put_u32(out, v);
    }
    void operator()(property_id pid, varint_value v) {
        put_u8(out, static_cast<std::uint8_t>(pid));
        STARLING_BUG(v.value <= max_varint, "subscription identifier out of range");
        put_varint(out, v.value <= max_varint ? v.value : max_varint);
    }
    void operator()(property_id pid, std::string_view s) {
        put_u8(out, static_cast<std::uint8_t>(pid));
        put_string(out, s);
    }
    void operator()(property_id pid, const user_property& up) {
        put_u8(out, static_cast<std::uint8_t>(pid));
        put_string(out, up.first);
        put_string(out, up.second);
    }
};

bool read_flag(reader& r, std::optional<std::uint8_t>& field, const char* detail) {
    std::uint8_t v = 0;
    if (!r.u8(v)) {
        return false;
    }
    if (v > 1) {
        return r.fail(reason_code::protocol_error, detail);
    }
    field = v;
    return true;
}

bool read_u16(reader& r, std::optional<std::uint16_t>& field) {
    std::uint16_t v = 0;
    if (!r.u16(v)) {
        return false;
    }
    field = v;
    return true;
}

bool read_u32(reader& r, std::optional<std::uint32_t>& field) {
    std::uint32_t v = 0;
    if (!r.u32(v)) {
        return false;
    }
    field = v;
    return true;
}

bool read_utf8(reader& r, std::optional<std::string>& field) {
    std::string_view v;
    if (!r.utf8_view(v)) {
        return false;
    }
    field.emplace(v);
    return true;
}

bool read_binary(reader& r, std::optional<std::string>& field) {
    std::string_view v;
    if (!r.raw_string(v)) {
        return false;
    }
    field.emplace(v);
    return true;
}

bool read_property(reader& r, property_id pid, properties& out) {
    switch (pid) {
        case id::payload_format_indicator:
            return read_flag(r, out.payload_format_indicator,
                             "payload format indicator other than 0 or 1");
        case id::message_expiry_interval:
            return read_u32(r, out.message_expiry_interval);
        case id::content_type:
            return read_utf8(r, out.content_type);
        case id::response_topic: {
            if (!read_utf8(r, out.response_topic)) {
                return false;
            }
            // A Response Topic is a Topic Name (MQTT-3.3.2-14).
            if (out.response_topic->empty() || has_wildcard(*out.response_topic)) {
                return r.fail(reason_code::protocol_error, "invalid response topic");
            }
            return true;
        }
        case id::correlation_data:
            return read_binary(r, out.correlation_data);
        case id::subscription_identifier: {
            std::uint32_t v = 0;
            if (!r.varint(v)) {
                return false;
            }
            if (v == 0) {
                return r.fail(reason_code::protocol_error, "subscription identifier 0");
            }
            out.subscription_identifiers.push_back(v);
            return true;
        }
        case id::session_expiry_interval:
            return read_u32(r, out.session_expiry_interval);
        case id::assigned_client_identifier:
            return read_utf8(r, out.assigned_client_identifier);
        case id::server_keep_alive:
            return read_u16(r, out.server_keep_alive);
        case id::authentication_method:
            return read_utf8(r, out.authentication_method);
        case id::authentication_data:
            return read_binary(r, out.authentication_data);
        case id::request_problem_information:
            return read_flag(r, out.request_problem_information,
                             "request problem information other than 0 or 1");
        case id::will_delay_interval:
            return read_u32(r, out.will_delay_interval);
        case id::request_response_information:
            return read_flag(r, out.request_response_information,
                             "request response information other than 0 or 1");
        case id::response_information:
            return read_utf8(r, out.response_information);
        case id::server_reference:
            return read_utf8(r, out.server_reference);
        case id::reason_string:
            return read_utf8(r, out.reason_string);
        case id::receive_maximum:
            if (!read_u16(r, out.receive_maximum)) {
                return false;
            }
            if (*out.receive_maximum == 0) {
                return r.fail(reason_code::protocol_error, "receive maximum 0");
            }
            return true;
        case id::topic_alias_maximum:
            return read_u16(r, out.topic_alias_maximum);
        case id::topic_alias:
            if (!read_u16(r, out.topic_alias)) {
                return false;
            }
            if (*out.topic_alias == 0) {
                // MQTT-3.3.2-8; the receiver answers with Topic Alias invalid.
                return r.fail(reason_code::topic_alias_invalid, "topic alias 0");
            }
            return true;
        case id::maximum_qos:
            return read_flag(r, out.maximum_qos, "maximum QoS other than 0 or 1");
        case id::retain_available:
            return read_flag(r, out.retain_available, "retain available other than 0 or 1");
        case id::user_property: {
            std::string_view key;
            std::string_view value;
            if (!r.utf8_view(key) || !r.utf8_view(value)) {
                return false;
            }
            out.user_properties.emplace_back(std::string(key), std::string(value));
            return true;
        }
        case id::maximum_packet_size:
            if (!read_u32(r, out.maximum_packet_size)) {
                return false;
            }
            if (*out.maximum_packet_size == 0) {
                return r.fail(reason_code::protocol_error, "maximum packet size 0");
            }
            return true;
        case id::wildcard_subscription_available:
            return read_flag(r, out.wildcard_subscription_available,
                             "wildcard subscription available other than 0 or 1");
        case id::subscription_identifier_available:
            return read_flag(r, out.subscription_identifier_available,
                             "subscription identifier available other than 0 or 1");
        case id::shared_subscription_available:
            return read_flag(r, out.shared_subscription_available,
                             "shared subscription available other than 0 or 1");
    }
    return r.fail(reason_code::malformed_packet, "unknown property identifier");
}

}  // namespace

bool decode_properties(reader& r, property_scope scope, properties& out) {
    std::uint32_t length = 0;
    if (!r.varint(length)) {
        return false;
    }
    if (length > r.remaining()) {
        return r.fail(reason_code::malformed_packet, "property length exceeds the packet");
    }
    const std::size_t end_remaining = r.remaining() - length;
    const std::uint64_t ok = allowed(scope);
    // Identifiers that may repeat: User Property always, Subscription Identifier in PUBLISH
    // (server to client; the PUBLISH decoder rejects it from a client).
    std::uint64_t repeatable = bit(id::user_property);
    if (scope == property_scope::publish) {
        repeatable |= bit(id::subscription_identifier);
    }
    std::uint64_t seen = 0;
    while (r.remaining() > end_remaining) {
        // The identifier is a Variable Byte Integer; every defined one fits in one byte.
        std::uint32_t raw = 0;
        if (!r.varint(raw)) {
            return false;
        }
        if (raw >= 64 || (known_properties & (std::uint64_t{1} << raw)) == 0) {
            return r.fail(reason_code::malformed_packet, "unknown property identifier");
        }
        auto pid = static_cast<property_id>(raw);
        std::uint64_t b = bit(pid);
        if ((ok & b) == 0) {
            // "An Identifier which is not valid for its packet type ... is a Malformed Packet"
            // (MQTT 5.0 section 2.2.2.2).
            return r.fail(reason_code::malformed_packet, "property not allowed in this packet");
        }
        if ((seen & b) != 0 && (repeatable & b) == 0) {
            return r.fail(reason_code::protocol_error, "property included more than once");
        }
        seen |= b;
        if (!read_property(r, pid, out)) {
            return false;
        }
        if (r.remaining() < end_remaining) {
            return r.fail(reason_code::malformed_packet, "property overruns the property length");
        }
    }
    return true;
}

std::size_t properties_size(const properties& p, property_scope scope,
                            const publish_overrides* overrides) noexcept {
    sizer s;
    visit_properties(p, scope, overrides, s);
    return s.size;
}

void encode_properties(const properties& p, property_scope scope, std::size_t size,
                       std::string& out, const publish_overrides* overrides) {
    put_varint(out, static_cast<std::uint32_t>(size));
    visit_properties(p, scope, overrides, writer{out});
}

}  // namespace starling::mqtt::detail
