#include "mqtt/packet/suback.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

TEST(suback, encodes_3_1_1_byte_for_byte_mapping_failures_to_0x80) {
    suback s{.packet_id = 7,
             .reason_codes = {reason_code::granted_qos_0, reason_code::granted_qos_2,
                              reason_code::not_authorized}};
    EXPECT_EQ(encoded(s, protocol_version::v3_1_1), wire({0x90, 0x05, 0, 7, 0x00, 0x02, 0x80}));
    EXPECT_EQ(encoded(s, protocol_version::v5), wire({0x90, 0x06, 0, 7, 0, 0x00, 0x02, 0x87}));
}

TEST(suback, round_trips_at_every_version) {
    for (protocol_version v : all_versions) {
        suback s{.packet_id = 1,
                 .reason_codes = {reason_code::granted_qos_1, reason_code::success,
                                  reason_code::granted_qos_2}};
        EXPECT_EQ(round_trip(s, v, receiver::client), s) << to_string(v);
    }
}

TEST(suback, v3_failure_decodes_as_unspecified_error) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x90, 0x03, 0, 1, 0x80}));
    ASSERT_NE(packet_as<suback>(r), nullptr);
    EXPECT_EQ(packet_as<suback>(r)->reason_codes,
              std::vector<reason_code>{reason_code::unspecified_error});
}

TEST(suback, round_trips_v5_codes_and_properties) {
    suback s{.packet_id = 1,
             .reason_codes = {reason_code::topic_filter_invalid,
                              reason_code::shared_subscriptions_not_supported,
                              reason_code::wildcard_subscriptions_not_supported}};
    s.properties.reason_string = "nope";
    s.properties.user_properties = {{"a", "b"}};
    EXPECT_EQ(round_trip(s, protocol_version::v5, receiver::client), s);
}

TEST(decoder_malformed, reserved_flags_on_suback) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x92, 0x03, 0, 1, 0}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, reserved_suback_return_code) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x90, 0x03, 0, 1, 0x03}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, suback_reason_code_not_allowed) {
    auto r = decode_client(protocol_version::v5, wire({0x90, 0x04, 0, 1, 0, 0x04}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, suback_without_reason_codes) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x90, 0x02, 0, 1}));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, suback_packet_id_0) {
    auto r = decode_client(protocol_version::v3_1_1, wire({0x90, 0x03, 0, 0, 0}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, suback_received_by_server) {
    auto r = decode_server(protocol_version::v3_1_1, wire({0x90, 0x03, 0, 1, 0}));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
