#include "mqtt/packet/connack.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

TEST(connack, encodes_3_1_1_accept_byte_for_byte) {
    connack c{.session_present = true};
    EXPECT_EQ(encoded(c, protocol_version::v3_1_1), wire({0x20, 0x02, 0x01, 0x00}));
}

TEST(connack, encodes_v5_with_empty_properties) {
    connack c;
    EXPECT_EQ(encoded(c, protocol_version::v5), wire({0x20, 0x03, 0x00, 0x00, 0x00}));
}

TEST(connack, round_trips_at_every_version) {
    for (protocol_version v : all_versions) {
        connack c;
        c.session_present = v != protocol_version::v3_1;  // 3.1 has no Session Present
        EXPECT_EQ(round_trip(c, v, receiver::client), c) << to_string(v);
        connack refused{.reason_code = reason_code::not_authorized};
        EXPECT_EQ(round_trip(refused, v, receiver::client), refused) << to_string(v);
    }
}

TEST(connack, v3_maps_reason_codes_to_return_codes) {
    connack c{.reason_code = reason_code::banned};
    EXPECT_EQ(encoded(c, protocol_version::v3_1_1), wire({0x20, 0x02, 0x00, 0x05}));
    connack busy{.reason_code = reason_code::server_busy};
    EXPECT_EQ(encoded(busy, protocol_version::v3_1_1), wire({0x20, 0x02, 0x00, 0x03}));
    connack bad{.reason_code = reason_code::unsupported_protocol_version};
    EXPECT_EQ(encoded(bad, protocol_version::v3_1), wire({0x20, 0x02, 0x00, 0x01}));
}

TEST(connack, session_present_is_never_sent_with_a_refusal) {
    connack c{.session_present = true, .reason_code = reason_code::not_authorized};
    EXPECT_EQ(encoded(c, protocol_version::v3_1_1), wire({0x20, 0x02, 0x00, 0x05}));
}

TEST(connack, round_trips_every_v5_connack_property) {
    connack c;
    c.properties.session_expiry_interval = 0;
    c.properties.assigned_client_identifier = "auto-123";
    c.properties.server_keep_alive = 30;
    c.properties.authentication_method = "m";
    c.properties.authentication_data = "d";
    c.properties.response_information = "resp/";
    c.properties.server_reference = "other:1883";
    c.properties.reason_string = "welcome";
    c.properties.receive_maximum = 100;
    c.properties.topic_alias_maximum = 16;
    c.properties.maximum_qos = 1;
    c.properties.retain_available = 0;
    c.properties.user_properties = {{"node", "n1"}};
    c.properties.maximum_packet_size = 1 << 20;
    c.properties.wildcard_subscription_available = 1;
    c.properties.subscription_identifier_available = 0;
    c.properties.shared_subscription_available = 1;
    EXPECT_EQ(round_trip(c, protocol_version::v5, receiver::client), c);
}

TEST(connack, properties_not_allowed_in_connack_are_not_written) {
    connack c;
    c.properties.topic_alias = 3;  // a PUBLISH property
    c.properties.will_delay_interval = 3;
    EXPECT_EQ(encoded(c, protocol_version::v5), wire({0x20, 0x03, 0x00, 0x00, 0x00}));
}

TEST(decoder_malformed, reserved_connack_flags) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x20, 0x02, 0x02, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, reserved_flags_on_connack) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x21, 0x02, 0x00, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, reserved_connect_return_code) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x20, 0x02, 0x00, 0x06}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, connack_session_present_with_refusal) {
    auto v3 = decode_client(protocol_version::v3_1_1, wire({0x20, 0x02, 0x01, 0x05}));
    EXPECT_EQ(error_code(v3), reason_code::malformed_packet);
    auto v5 = decode_client(protocol_version::v5, wire({0x20, 0x03, 0x01, 0x87, 0x00}));
    EXPECT_EQ(error_code(v5), reason_code::protocol_error);
}

TEST(decoder_malformed, connack_reason_code_not_allowed) {
    // 0x8E Session taken over is a DISCONNECT reason code.
    auto r = decode_client(protocol_version::v5, wire({0x20, 0x03, 0x00, 0x8E, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, connack_wrong_length_3_1_1) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x20, 0x03, 0x00, 0x00, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, connack_without_property_length_v5) {
    auto r = decode_client(protocol_version::v5, wire({0x20, 0x02, 0x00, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, maximum_qos_other_than_0_or_1) {
    auto r =
        decode_client(protocol_version::v5, frame(0x20, wire({0, 0}) + props(wire({0x24, 2}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, retain_available_other_than_0_or_1) {
    auto r =
        decode_client(protocol_version::v5, frame(0x20, wire({0, 0}) + props(wire({0x25, 2}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, wildcard_subscription_available_other_than_0_or_1) {
    auto r =
        decode_client(protocol_version::v5, frame(0x20, wire({0, 0}) + props(wire({0x28, 2}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, subscription_identifier_available_other_than_0_or_1) {
    auto r =
        decode_client(protocol_version::v5, frame(0x20, wire({0, 0}) + props(wire({0x29, 2}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, shared_subscription_available_other_than_0_or_1) {
    auto r =
        decode_client(protocol_version::v5, frame(0x20, wire({0, 0}) + props(wire({0x2A, 2}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, connack_received_by_server) {
    auto r = decode_server(protocol_version::v5, wire({0x20, 0x03, 0x00, 0x00, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
