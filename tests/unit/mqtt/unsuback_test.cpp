#include "mqtt/packet/unsuback.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

TEST(unsuback, encodes_byte_for_byte) {
    unsuback u{.packet_id = 5, .reason_codes = {reason_code::success}};
    EXPECT_EQ(encoded(u, protocol_version::v3_1_1), wire({0xB0, 0x02, 0, 5}));
    EXPECT_EQ(encoded(u, protocol_version::v5), wire({0xB0, 0x04, 0, 5, 0, 0}));
}

TEST(unsuback, round_trips_at_every_version) {
    for (protocol_version v : {protocol_version::v3_1, protocol_version::v3_1_1}) {
        unsuback u{.packet_id = 5};
        EXPECT_EQ(round_trip(u, v, receiver::client), u) << to_string(v);
    }
    unsuback u{.packet_id = 5,
               .reason_codes = {reason_code::success, reason_code::no_subscription_existed,
                                reason_code::topic_filter_invalid}};
    u.properties.reason_string = "r";
    EXPECT_EQ(round_trip(u, protocol_version::v5, receiver::client), u);
}

TEST(decoder_malformed, reserved_flags_on_unsuback) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0xB1, 0x02, 0, 1}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, unsuback_wrong_length_3_1_1) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0xB0, 0x03, 0, 1, 0}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, unsuback_reason_code_not_allowed) {
    auto r = decode_client(protocol_version::v5, wire({0xB0, 0x04, 0, 1, 0, 0x01}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, unsuback_without_reason_codes_v5) {
    auto r = decode_client(protocol_version::v5, wire({0xB0, 0x03, 0, 1, 0}));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, unsuback_packet_id_0) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0xB0, 0x02, 0, 0}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, unsuback_received_by_server) {
    auto r = decode_server(protocol_version::v3_1_1, wire({0xB0, 0x02, 0, 1}));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
