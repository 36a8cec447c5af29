#include "mqtt/packet/auth.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

auth continue_auth() {
    auth a{.reason_code = reason_code::continue_authentication};
    a.properties.authentication_method = "SCRAM-SHA-256";
    a.properties.authentication_data = std::string("\x00\xFF", 2);
    return a;
}

TEST(auth, encodes_byte_for_byte) {
    EXPECT_EQ(encoded(auth{}, protocol_version::v5), wire({0xF0, 0x00}));
    auth a{.reason_code = reason_code::re_authenticate};
    a.properties.authentication_method = "m";
    EXPECT_EQ(encoded(a, protocol_version::v5), wire({0xF0, 0x06, 0x19, 0x04, 0x15, 0, 1, 'm'}));
}

TEST(auth, round_trips_both_directions) {
    auth a = continue_auth();
    a.properties.reason_string = "more";
    a.properties.user_properties = {{"a", "b"}};
    EXPECT_EQ(round_trip(a, protocol_version::v5, receiver::server), a);
    EXPECT_EQ(round_trip(a, protocol_version::v5, receiver::client), a);
}

TEST(auth, empty_auth_is_success) {
    auto r = decode_server(protocol_version::v5, wire({0xF0, 0x00}));
    ASSERT_NE(packet_as<auth>(r), nullptr);
    EXPECT_EQ(packet_as<auth>(r)->reason_code, reason_code::success);
}

TEST(auth, is_not_encoded_before_v5) {
    std::string out = "x";
    encode(continue_auth(), protocol_version::v3_1_1, out);
    EXPECT_EQ(out, "x");
    EXPECT_EQ(encoded_size(packet{continue_auth()}, protocol_version::v3_1_1), 0U);
}

TEST(decoder_malformed, auth_before_v5) {
    for (protocol_version v : {protocol_version::v3_1, protocol_version::v3_1_1}) {
        auto r = decode_server(v, wire({0xF0, 0x00}));
        EXPECT_EQ(error_code(r), reason_code::malformed_packet) << to_string(v);
    }
}

TEST(decoder_malformed, reserved_flags_on_auth) {
    auto r = decode_server(protocol_version::v5, wire({0xF1, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, auth_reason_code_not_allowed) {
    auto r = decode_server(protocol_version::v5,
                           frame(0xF0, wire({0x87}) + props(wire({0x15}) + str("m"))));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, auth_without_authentication_method) {
    auto r = decode_server(protocol_version::v5, frame(0xF0, wire({0x18}) + props()));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, authentication_method_twice) {
    auto r = decode_server(
        protocol_version::v5,
        frame(0xF0, wire({0x18}) + props(wire({0x15}) + str("m") + wire({0x15}) + str("m"))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
