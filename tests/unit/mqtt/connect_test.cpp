#include "mqtt/packet/connect.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

connect decode_connect_ok(const std::string& bytes) {
    decode_result r = decode_first(bytes);
    const connect* c = packet_as<connect>(r);
    return c != nullptr ? *c : connect{};
}

connect round_trip_connect(const connect& c) {
    std::string bytes = encoded(c, c.protocol_version);
    EXPECT_EQ(bytes.size(), encoded_size(packet{c}, c.protocol_version));
    return decode_connect_ok(bytes);
}

// CONNECT body before the payload, for hand-built malformed packets.
std::string header_v311(int connect_flags) {
    return str("MQTT") + wire({4, connect_flags}) + u16(60);
}

std::string header_v5(int connect_flags, std::string_view properties = {}) {
    return str("MQTT") + wire({5, connect_flags}) + u16(60) + props(properties);
}

TEST(connect, encodes_the_minimal_3_1_1_packet_byte_for_byte) {
    connect c;
    c.protocol_version = protocol_version::v3_1_1;
    c.keep_alive = 60;
    c.client_id = "c";
    EXPECT_EQ(encoded(c, c.protocol_version),
              wire({0x10, 0x0D, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 60, 0, 1, 'c'}));
}

TEST(connect, encodes_3_1_with_protocol_name_mqisdp) {
    connect c;
    c.protocol_version = protocol_version::v3_1;
    c.client_id = "c";
    std::string bytes = encoded(c, c.protocol_version);
    EXPECT_EQ(bytes.substr(2, 9), str("MQIsdp") + wire({3}));
}

TEST(connect, round_trips_at_every_version) {
    for (protocol_version v : all_versions) {
        connect c;
        c.protocol_version = v;
        c.clean_start = false;
        c.keep_alive = 300;
        c.client_id = "client-1";
        c.will = will_message{"last/will", std::string("bye\0!", 5), qos::exactly_once, true, {}};
        c.username = "user";
        c.password = std::string("p\0w", 3);
        EXPECT_EQ(round_trip_connect(c), c) << to_string(v);
    }
}

TEST(connect, round_trips_every_v5_connect_and_will_property) {
    connect c;
    c.protocol_version = protocol_version::v5;
    c.client_id = "c5";
    c.properties.session_expiry_interval = 3600;
    c.properties.authentication_method = "SCRAM-SHA-1";
    c.properties.authentication_data = std::string("\x01\x00\x02", 3);
    c.properties.request_problem_information = 0;
    c.properties.request_response_information = 1;
    c.properties.receive_maximum = 20;
    c.properties.topic_alias_maximum = 10;
    c.properties.user_properties = {{"k", "v"}, {"k", "v2"}};
    c.properties.maximum_packet_size = 65536;
    will_message w;
    w.topic = "w";
    w.payload = "gone";
    w.qos = qos::at_least_once;
    w.properties.payload_format_indicator = 1;
    w.properties.message_expiry_interval = 10;
    w.properties.content_type = "text/plain";
    w.properties.response_topic = "reply/here";
    w.properties.correlation_data = "id-1";
    w.properties.will_delay_interval = 5;
    w.properties.user_properties = {{"a", "b"}};
    c.will = w;
    EXPECT_EQ(round_trip_connect(c), c);
}

TEST(connect, v3_encoding_drops_properties) {
    connect c;
    c.protocol_version = protocol_version::v3_1_1;
    c.client_id = "c";
    c.properties.session_expiry_interval = 10;
    c.will = will_message{"t", "p", qos::at_most_once, false, {}};
    c.will->properties.will_delay_interval = 3;
    connect expected = c;
    expected.properties = {};
    expected.will->properties = {};
    EXPECT_EQ(round_trip_connect(c), expected);
}

TEST(connect, password_without_username_is_legal_in_v5) {
    connect c;
    c.protocol_version = protocol_version::v5;
    c.client_id = "c";
    c.password = "secret";
    EXPECT_EQ(round_trip_connect(c), c);
}

TEST(connect, empty_client_id_is_legal_in_v5_and_with_clean_session_in_3_1_1) {
    for (protocol_version v : {protocol_version::v3_1_1, protocol_version::v5}) {
        connect c;
        c.protocol_version = v;
        c.clean_start = true;
        EXPECT_EQ(round_trip_connect(c), c);
    }
}

TEST(connect, decoder_learns_the_version) {
    for (protocol_version v : all_versions) {
        decoder d;
        EXPECT_FALSE(d.version());
        d.feed(connect_bytes(v));
        ASSERT_TRUE(std::holds_alternative<packet>(d.next()));
        EXPECT_EQ(d.version(), v);
    }
}

TEST(decoder_malformed, unsupported_protocol_name) {
    auto r = decode_first(frame(0x10, str("MQTX") + wire({4, 2}) + u16(0) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::unsupported_protocol_version);
}

TEST(decoder_malformed, unsupported_protocol_level) {
    for (int level : {0, 2, 6, 0x84}) {
        auto r = decode_first(frame(0x10, str("MQTT") + wire({level, 2}) + u16(0) + str("c")));
        EXPECT_EQ(error_code(r), reason_code::unsupported_protocol_version) << level;
    }
}

TEST(decoder_malformed, protocol_name_does_not_match_level) {
    auto mqisdp4 = decode_first(frame(0x10, str("MQIsdp") + wire({4, 2}) + u16(0) + str("c")));
    EXPECT_EQ(error_code(mqisdp4), reason_code::unsupported_protocol_version);
    auto mqtt3 = decode_first(frame(0x10, str("MQTT") + wire({3, 2}) + u16(0) + str("c")));
    EXPECT_EQ(error_code(mqtt3), reason_code::unsupported_protocol_version);
}

TEST(decoder_malformed, reserved_flags_on_connect) {
    auto r = decode_first(frame(0x11, header_v311(0x02) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, reserved_connect_flag_set) {
    for (protocol_version v : all_versions) {
        std::string body = (v == protocol_version::v3_1 ? str("MQIsdp") : str("MQTT")) +
                           wire({static_cast<int>(v), 0x03}) + u16(0) +
                           (v == protocol_version::v5 ? props() : "") + str("c");
        EXPECT_EQ(error_code(decode_first(frame(0x10, body))), reason_code::malformed_packet);
    }
}

TEST(decoder_malformed, will_qos_3) {
    auto r =
        decode_first(frame(0x10, header_v311(0x02 | 0x04 | 0x18) + str("c") + str("t") + str("p")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, will_qos_without_will_flag) {
    auto r = decode_first(frame(0x10, header_v311(0x02 | 0x08) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, will_retain_without_will_flag) {
    auto r = decode_first(frame(0x10, header_v5(0x02 | 0x20) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, will_flag_without_will_topic) {
    auto r = decode_first(frame(0x10, header_v311(0x02 | 0x04) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, will_topic_with_wildcard) {
    auto r = decode_first(frame(0x10, header_v311(0x06) + str("c") + str("a/#") + str("p")));
    EXPECT_EQ(error_code(r), reason_code::topic_name_invalid);
}

TEST(decoder_malformed, empty_will_topic) {
    auto r = decode_first(frame(0x10, header_v311(0x06) + str("c") + str("") + str("p")));
    EXPECT_EQ(error_code(r), reason_code::topic_name_invalid);
}

TEST(decoder_malformed, password_flag_without_username_in_3_1_1) {
    auto r = decode_first(frame(0x10, header_v311(0x02 | 0x40) + str("c") + str("pw")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, password_flag_without_username_in_3_1) {
    auto r =
        decode_first(frame(0x10, str("MQIsdp") + wire({3, 0x42}) + u16(0) + str("c") + str("pw")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, username_flag_without_username) {
    auto r = decode_first(frame(0x10, header_v311(0x82) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, empty_client_id_without_clean_session_in_3_1_1) {
    auto r = decode_first(frame(0x10, header_v311(0x00) + str("")));
    EXPECT_EQ(error_code(r), reason_code::client_identifier_not_valid);
    EXPECT_EQ(to_connect_return_code(error_code(r)), connect_return_code::identifier_rejected);
}

TEST(decoder_malformed, empty_client_id_in_3_1) {
    auto r = decode_first(frame(0x10, str("MQIsdp") + wire({3, 0x02}) + u16(0) + str("")));
    EXPECT_EQ(error_code(r), reason_code::client_identifier_not_valid);
}

TEST(decoder_malformed, client_id_with_invalid_utf8) {
    auto r = decode_first(frame(0x10, header_v311(0x02) + str("\xC0\xAF")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, client_id_with_u0000) {
    auto r = decode_first(frame(0x10, header_v311(0x02) + str(std::string_view("a\0b", 3))));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, username_with_invalid_utf8) {
    auto r = decode_first(frame(0x10, header_v311(0x82) + str("c") + str("\xED\xA0\x80")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, bytes_after_connect_payload) {
    auto r = decode_first(frame(0x10, header_v311(0x02) + str("c") + wire({0})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, truncated_connect) {
    auto r = decode_first(frame(0x10, str("MQTT") + wire({4, 2})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, authentication_data_without_method) {
    auto r = decode_first(frame(0x10, header_v5(0x02, wire({0x16}) + str("x")) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, connect_property_not_allowed_in_will) {
    // Session Expiry Interval is a CONNECT property, not a will property.
    auto r = decode_first(frame(
        0x10, header_v5(0x06) + str("c") + props(wire({0x11}) + u32(5)) + str("t") + str("p")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, request_problem_information_other_than_0_or_1) {
    auto r = decode_first(frame(0x10, header_v5(0x02, wire({0x17, 2})) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, request_response_information_other_than_0_or_1) {
    auto r = decode_first(frame(0x10, header_v5(0x02, wire({0x19, 7})) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, receive_maximum_0) {
    auto r = decode_first(frame(0x10, header_v5(0x02, wire({0x21}) + u16(0)) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, maximum_packet_size_0) {
    auto r = decode_first(frame(0x10, header_v5(0x02, wire({0x27}) + u32(0)) + str("c")));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, will_payload_not_utf8_with_format_indicator) {
    decoder d(decoder_limits{.validate_payload_format = true});
    d.feed(frame(0x10,
                 header_v5(0x06) + str("c") + props(wire({0x01, 1})) + str("t") + str("\xFF\xFE")));
    EXPECT_EQ(error_code(d.next()), reason_code::payload_format_invalid);
}

TEST(decoder_malformed, version_is_known_after_a_failed_connect) {
    decoder d;
    d.feed(frame(0x10, header_v311(0x00) + str("")));
    EXPECT_EQ(error_code(d.next()), reason_code::client_identifier_not_valid);
    EXPECT_EQ(d.version(), protocol_version::v3_1_1);
}

TEST(decoder_malformed, first_packet_not_connect) {
    auto r = decode_first(wire({0xC0, 0x00}));  // PINGREQ
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, second_connect) {
    auto r = decode_server(protocol_version::v5, connect_bytes(protocol_version::v5));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, connect_received_by_client) {
    auto r = decode_client(protocol_version::v5, connect_bytes(protocol_version::v5));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
