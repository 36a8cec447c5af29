#include "mqtt/packet/pubcomp.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

constexpr int first_byte = 0x70;

TEST(pubcomp, encodes_byte_for_byte) {
    pubcomp p{.packet_id = 0x1234};
    EXPECT_EQ(encoded(p, protocol_version::v3_1_1), wire({first_byte, 0x02, 0x12, 0x34}));
    // v5 omits a Success reason code without properties.
    EXPECT_EQ(encoded(p, protocol_version::v5), wire({first_byte, 0x02, 0x12, 0x34}));
    p.reason_code = reason_code::packet_identifier_not_found;
    EXPECT_EQ(encoded(p, protocol_version::v5),
              wire({first_byte, 0x03, 0x12, 0x34, static_cast<int>(p.reason_code)}));
    // v3 has no reason code.
    EXPECT_EQ(encoded(p, protocol_version::v3_1), wire({first_byte, 0x02, 0x12, 0x34}));
}

TEST(pubcomp, round_trips_at_every_version_both_directions) {
    for (protocol_version v : all_versions) {
        pubcomp p{.packet_id = 9};
        EXPECT_EQ(round_trip(p, v, receiver::server), p) << to_string(v);
        EXPECT_EQ(round_trip(p, v, receiver::client), p) << to_string(v);
    }
}

TEST(pubcomp, round_trips_reason_code_and_properties_in_v5) {
    pubcomp p{.packet_id = 65535, .reason_code = reason_code::packet_identifier_not_found};
    EXPECT_EQ(round_trip(p, protocol_version::v5, receiver::server), p);
    p.properties.reason_string = "why";
    p.properties.user_properties = {{"a", "b"}};
    EXPECT_EQ(round_trip(p, protocol_version::v5, receiver::client), p);
    p.reason_code = reason_code::success;
    EXPECT_EQ(round_trip(p, protocol_version::v5, receiver::server), p);
}

TEST(pubcomp, decodes_the_short_v5_forms) {
    auto two = decode_server(protocol_version::v5, wire({first_byte, 0x02, 0x00, 0x05}));
    ASSERT_NE(packet_as<pubcomp>(two), nullptr);
    EXPECT_EQ(packet_as<pubcomp>(two)->reason_code, reason_code::success);
    auto three = decode_server(protocol_version::v5, wire({first_byte, 0x03, 0x00, 0x05, 0x92}));
    ASSERT_NE(packet_as<pubcomp>(three), nullptr);
    EXPECT_EQ(static_cast<int>(packet_as<pubcomp>(three)->reason_code), 0x92);
}

TEST(decoder_malformed, reserved_flags_on_pubcomp) {
    for (protocol_version v : all_versions) {
        for (int flags = 0; flags < 16; ++flags) {
            if ((first_byte & 0x0F) == flags) {
                continue;
            }
            if (v == protocol_version::v3_1 && (flags & 0x07) == (first_byte & 0x0F) &&
                (first_byte & 0x0F) != 0) {
                continue;  // 3.1 allowed DUP on PUBREL
            }
            auto r = decode_server(v, wire({(first_byte & 0xF0) | flags, 0x02, 0x00, 0x01}));
            EXPECT_EQ(error_code(r), reason_code::malformed_packet) << flags;
        }
    }
}

TEST(decoder_malformed, packet_id_0_in_pubcomp) {
    auto r = decode_server(protocol_version::v3_1_1, wire({first_byte, 0x02, 0x00, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, pubcomp_wrong_length_3_1_1) {
    auto r = decode_server(protocol_version::v3_1_1, wire({first_byte, 0x03, 0x00, 0x01, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
    auto shorter = decode_server(protocol_version::v3_1_1, wire({first_byte, 0x01, 0x00}));
    EXPECT_EQ(error_code(shorter), reason_code::malformed_packet);
}

TEST(decoder_malformed, pubcomp_reason_code_not_allowed) {
    auto r = decode_server(protocol_version::v5, wire({first_byte, 0x03, 0x00, 0x01, 0x10}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, pubcomp_property_not_allowed) {
    // Topic Alias belongs to PUBLISH.
    auto r = decode_server(protocol_version::v5,
                           frame(first_byte, u16(1) + wire({0}) + props(wire({0x23}) + u16(1))));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, pubcomp_bytes_after_properties) {
    auto r =
        decode_server(protocol_version::v5, frame(first_byte, u16(1) + wire({0}) + props() + "x"));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

}  // namespace
}  // namespace starling::mqtt::test
