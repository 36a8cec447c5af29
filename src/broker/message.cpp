#include "broker/message.h"

#include "proto/starling.pb.h"

#include <atomic>

namespace starling::broker {

std::uint32_t app_message::remaining_expiry_seconds(std::int64_t now_ms) const {
    if (expires_at_ms == 0) {
        return 0;
    }
    std::int64_t left_ms = expires_at_ms - now_ms;
    if (left_ms <= 0) {
        return 0;
    }
    return static_cast<std::uint32_t>((left_ms + 999) / 1000);
}

app_message from_publish(const mqtt::publish& p, std::string publisher_id, std::string node_id,
                         std::int64_t now_ms) {
    app_message m;
    m.topic = p.topic;
    m.payload = p.payload;
    m.qos = p.qos;
    m.retain = p.retain;
    m.properties.payload_format_indicator = p.properties.payload_format_indicator;
    m.properties.content_type = p.properties.content_type;
    m.properties.response_topic = p.properties.response_topic;
    m.properties.correlation_data = p.properties.correlation_data;
    m.properties.user_properties = p.properties.user_properties;
    if (p.properties.message_expiry_interval) {
        m.expires_at_ms =
            now_ms + static_cast<std::int64_t>(*p.properties.message_expiry_interval) * 1000;
    }
    m.created_at_ms = now_ms;
    // One counter for the process: a node's messages of one millisecond still have an order.
    static std::atomic<std::uint64_t> last_sequence{0};
    m.sequence = last_sequence.fetch_add(1, std::memory_order_relaxed) + 1;
    m.publisher_id = std::move(publisher_id);
    m.node_id = std::move(node_id);
    return m;
}

void to_proto(const app_message& m, proto::publish_msg& out) {
    out.set_client_id(m.publisher_id);
    out.set_payload(m.payload);
    out.set_retain(m.retain);
    out.set_qos(static_cast<std::uint32_t>(m.qos));
    out.set_topic_name(m.topic);
    out.set_created_at_ms(m.created_at_ms);
    out.set_node_id(m.node_id);
    out.set_sequence(m.sequence);
    for (const auto& [k, v] : m.properties.user_properties) {
        auto* up = out.add_user_properties();
        up->set_key(k);
        up->set_value(v);
    }
    auto* props = out.mutable_properties();
    if (m.properties.payload_format_indicator) {
        props->set_payload_format_indicator(*m.properties.payload_format_indicator);
    }
    if (m.properties.content_type) {
        props->set_content_type(*m.properties.content_type);
    }
    if (m.properties.response_topic) {
        props->set_response_topic(*m.properties.response_topic);
    }
    if (m.properties.correlation_data) {
        props->set_correlation_data(*m.properties.correlation_data);
    }
    if (m.expires_at_ms != 0) {
        props->set_expires_at_ms(m.expires_at_ms);
    }
}

app_message from_proto(const proto::publish_msg& in) {
    app_message m;
    m.publisher_id = in.client_id();
    m.payload = in.payload();
    m.retain = in.retain();
    m.qos = static_cast<mqtt::qos>(in.qos() > 2 ? 2 : in.qos());
    m.topic = in.topic_name();
    m.created_at_ms = in.created_at_ms();
    m.node_id = in.node_id();
    m.sequence = in.sequence();
    m.properties.user_properties.reserve(static_cast<std::size_t>(in.user_properties_size()));
    for (const auto& up : in.user_properties()) {
        m.properties.user_properties.emplace_back(up.key(), up.value());
    }
    if (in.has_properties()) {
        const auto& props = in.properties();
        if (props.has_payload_format_indicator()) {
            m.properties.payload_format_indicator =
                static_cast<std::uint8_t>(props.payload_format_indicator());
        }
        if (props.has_content_type()) {
            m.properties.content_type = props.content_type();
        }
        if (props.has_response_topic()) {
            m.properties.response_topic = props.response_topic();
        }
        if (props.has_correlation_data()) {
            m.properties.correlation_data = props.correlation_data();
        }
        if (props.has_expires_at_ms()) {
            m.expires_at_ms = props.expires_at_ms();
        }
    }
    return m;
}

std::string serialize(const app_message& m) {
    proto::publish_msg msg;
    to_proto(m, msg);
    return msg.SerializeAsString();
}

result<app_message> parse_message(std::string_view bytes) {
    proto::publish_msg msg;
    if (!msg.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
        return std::make_error_code(std::errc::bad_message);
    }
    return from_proto(msg);
}

}  // namespace starling::broker
