#include "mqtt/packet/disconnect.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

TEST(disconnect, encodes_byte_for_byte) {
    EXPECT_EQ(encoded(disconnect{}, protocol_version::v3_1_1), wire({0xE0, 0x00}));
    EXPECT_EQ(encoded(disconnect{}, protocol_version::v5), wire({0xE0, 0x00}));
    disconnect d{.reason_code = reason_code::session_taken_over};
    EXPECT_EQ(encoded(d, protocol_version::v5), wire({0xE0, 0x01, 0x8E}));
    EXPECT_EQ(encoded(d, protocol_version::v3_1_1), wire({0xE0, 0x00}));
}

TEST(disconnect, round_trips_at_every_version) {
    for (protocol_version v : all_versions) {
        EXPECT_EQ(round_trip(disconnect{}, v, receiver::server), disconnect{}) << to_string(v);
    }
    disconnect d{.reason_code = reason_code::disconnect_with_will_message};
    d.properties.session_expiry_interval = 10;
    d.properties.reason_string = "bye";
    d.properties.user_properties = {{"a", "b"}};
    EXPECT_EQ(round_trip(d, protocol_version::v5, receiver::server), d);
    disconnect from_server{.reason_code = reason_code::use_another_server};
    from_server.properties.server_reference = "other";
    EXPECT_EQ(round_trip(from_server, protocol_version::v5, receiver::client), from_server);
}

TEST(disconnect, decodes_the_short_v5_forms) {
    auto empty = decode_server(protocol_version::v5, wire({0xE0, 0x00}));
    ASSERT_NE(packet_as<disconnect>(empty), nullptr);
    EXPECT_EQ(packet_as<disconnect>(empty)->reason_code, reason_code::normal_disconnection);
    auto code_only = decode_server(protocol_version::v5, wire({0xE0, 0x01, 0x04}));
    ASSERT_NE(packet_as<disconnect>(code_only), nullptr);
    EXPECT_EQ(packet_as<disconnect>(code_only)->reason_code,
              reason_code::disconnect_with_will_message);
}

TEST(decoder_malformed, reserved_flags_on_disconnect) {
    auto r = decode_server(protocol_version::v3_1_1, wire({0xE2, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, disconnect_with_body_3_1_1) {
    auto r = decode_server(protocol_version::v3_1_1, wire({0xE0, 0x01, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, disconnect_reason_code_not_allowed) {
    auto r = decode_server(protocol_version::v5, wire({0xE0, 0x01, 0x01}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, session_expiry_interval_in_disconnect_from_server) {
    auto r = decode_client(protocol_version::v5,
                           frame(0xE0, wire({0x00}) + props(wire({0x11}) + u32(1))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, disconnect_from_server_before_v5) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0xE0, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, disconnect_property_not_allowed) {
    auto r = decode_server(protocol_version::v5,
                           frame(0xE0, wire({0x00}) + props(wire({0x21}) + u16(5))));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

}  // namespace
}  // namespace starling::mqtt::test
