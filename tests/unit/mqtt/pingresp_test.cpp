#include "mqtt/packet/pingresp.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

TEST(pingresp, encodes_byte_for_byte) {
    for (protocol_version v : all_versions) {
        EXPECT_EQ(encoded(pingresp{}, v), wire({0xD0, 0x00}));
    }
}

TEST(pingresp, round_trips_at_every_version) {
    for (protocol_version v : all_versions) {
        EXPECT_EQ(round_trip(pingresp{}, v, receiver::client), pingresp{}) << to_string(v);
    }
}

TEST(decoder_malformed, reserved_flags_on_pingresp) {
    auto r = decode_client(protocol_version::v5, wire({0xD0 | 0x01, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, pingresp_with_body) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0xD0, 0x01, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, pingresp_received_by_server) {
    auto r = decode_server(protocol_version::v5, wire({0xD0, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
