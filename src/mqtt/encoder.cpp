#include "mqtt/encoder.h"

#include "base/assert.h"
#include "mqtt/packet/codec.h"

namespace starling::mqtt {

namespace {

using detail::body_size;
using detail::encode_body;

template <class T>
void encode_packet(const T& p, protocol_version version, std::string& out) {
    constexpr packet_type type = packet_type_of<T>;
    const std::size_t body = body_size(p, version);
    out.reserve(out.size() + detail::packet_size(body));
    detail::put_fixed_header(out, static_cast<std::uint8_t>(type), detail::required_flags(type),
                             body);
    encode_body(p, version, out);
}

template <class T>
std::size_t packet_size_of(const T& p, protocol_version version) noexcept {
    return detail::packet_size(body_size(p, version));
}

publish_header header_of(const publish& p) noexcept {
    return publish_header{p.topic,     p.qos,         p.retain, p.dup,
                          p.packet_id, &p.properties, {},       p.properties.topic_alias};
}

}  // namespace

void encode(const connect& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const connack& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const publish& p, protocol_version v, std::string& out) {
    encode_publish(out, v, header_of(p), p.payload);
}
void encode(const puback& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const pubrec& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const pubrel& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const pubcomp& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const subscribe& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const suback& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const unsubscribe& p, protocol_version v, std::string& out) {
    encode_packet(p, v, out);
}
void encode(const unsuback& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const pingreq& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const pingresp& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const disconnect& p, protocol_version v, std::string& out) { encode_packet(p, v, out); }
void encode(const auth& p, protocol_version v, std::string& out) {
    if (!is_v5(v)) {
        STARLING_BUG(false, "AUTH cannot be encoded before MQTT 5.0");
        return;
    }
    encode_packet(p, v, out);
}

void encode(const packet& p, protocol_version version, std::string& out) {
    std::visit([&](const auto& alternative) { encode(alternative, version, out); }, p);
}

std::size_t encoded_size(const packet& p, protocol_version version) {
    return std::visit(
        [&](const auto& alternative) -> std::size_t {
            using T = std::decay_t<decltype(alternative)>;
            if constexpr (std::is_same_v<T, publish>) {
                return encoded_publish_size(version, header_of(alternative),
                                            alternative.payload.size());
            } else if constexpr (std::is_same_v<T, auth>) {
                return is_v5(version) ? packet_size_of(alternative, version) : 0;
            } else {
                return packet_size_of(alternative, version);
            }
        },
        p);
}

void encode_publish(std::string& out, protocol_version version, const publish_header& header,
                    std::string_view payload) {
    const std::size_t props = detail::publish_properties_size(version, header);
    const std::size_t body = detail::publish_body_size(version, header, props, payload.size());
    out.reserve(out.size() + detail::packet_size(body));
    detail::put_fixed_header(out, static_cast<std::uint8_t>(packet_type::publish),
                             detail::publish_flags(header), body);
    detail::encode_publish_body(version, header, props, payload, out);
}

std::size_t encoded_publish_size(protocol_version version, const publish_header& header,
                                 std::size_t payload_size) {
    return detail::packet_size(detail::publish_body_size(
        version, header, detail::publish_properties_size(version, header), payload_size));
}

}  // namespace starling::mqtt
