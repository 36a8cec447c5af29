#include "mqtt/packet/unsubscribe.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

TEST(unsubscribe, encodes_3_1_1_byte_for_byte) {
    unsubscribe u{.packet_id = 3, .filters = {"a/#"}};
    EXPECT_EQ(encoded(u, protocol_version::v3_1_1), wire({0xA2, 0x07, 0, 3, 0, 3, 'a', '/', '#'}));
}

TEST(unsubscribe, round_trips_at_every_version) {
    for (protocol_version v : all_versions) {
        unsubscribe u{.packet_id = 3, .filters = {"a/#", "b", "$share/g/c/+"}};
        EXPECT_EQ(round_trip(u, v, receiver::server), u) << to_string(v);
    }
}

TEST(unsubscribe, round_trips_v5_user_properties) {
    unsubscribe u{.packet_id = 3, .filters = {"a"}};
    u.properties.user_properties = {{"k", "v"}};
    EXPECT_EQ(round_trip(u, protocol_version::v5, receiver::server), u);
}

TEST(decoder_malformed, reserved_flags_on_unsubscribe) {
    auto r = decode_server(protocol_version::v5, frame(0xA0, u16(1) + props() + str("a")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, empty_unsubscribe_payload) {
    auto v3 = decode_server(protocol_version::v3_1_1, frame(0xA2, u16(1)));
    EXPECT_EQ(error_code(v3), reason_code::protocol_error);
    auto v5 = decode_server(protocol_version::v5, frame(0xA2, u16(1) + props()));
    EXPECT_EQ(error_code(v5), reason_code::protocol_error);
}

TEST(decoder_malformed, unsubscribe_packet_id_0) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0xA2, u16(0) + str("a")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, unsubscribe_invalid_topic_filter) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0xA2, u16(1) + str("a/#/b")));
    EXPECT_EQ(error_code(r), reason_code::topic_filter_invalid);
}

TEST(decoder_malformed, unsubscribe_property_not_allowed) {
    auto r = decode_server(protocol_version::v5,
                           frame(0xA2, u16(1) + props(wire({0x0B, 1})) + str("a")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, unsubscribe_received_by_client) {
    auto r = decode_client(protocol_version::v3_1_1, frame(0xA2, u16(1) + str("a")));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
