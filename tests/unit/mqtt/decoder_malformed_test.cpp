// Malformed-packet rules that apply to every packet type: the fixed header and the property
// list. Packet-specific rules are in <type>_test.cpp, also in suite decoder_malformed.

#include "mqtt/decoder.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

// A QoS 0 v5 PUBLISH to "t" with the given encoded properties.
std::string publish_with(std::string_view encoded_properties) {
    return frame(0x30, str("t") + props(encoded_properties));
}

TEST(decoder_malformed, remaining_length_over_4_bytes) {
    decoder d = server_after_connect(protocol_version::v3_1_1);
    d.feed(wire({0x30, 0xFF, 0xFF, 0xFF, 0xFF}));  // detected before any further byte
    EXPECT_EQ(error_code(d.next()), reason_code::malformed_packet);
}

TEST(decoder_malformed, remaining_length_not_minimal_in_v5) {
    auto r = decode_server(protocol_version::v5, wire({0xC0, 0x80, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, remaining_length_not_minimal_in_v5_connect) {
    std::string c = connect_bytes(protocol_version::v5);
    // Re-encode the 1-byte remaining length in two bytes.
    std::string padded =
        c.substr(0, 1) + wire({static_cast<unsigned char>(c[1]) | 0x80, 0x00}) + c.substr(2);
    EXPECT_EQ(error_code(decode_first(padded)), reason_code::malformed_packet);
}

TEST(decoder, non_minimal_remaining_length_is_accepted_before_v5) {
    auto r = decode_server(protocol_version::v3_1_1, wire({0xC0, 0x80, 0x00}));
    EXPECT_NE(packet_as<pingreq>(r), nullptr);
}

TEST(decoder_malformed, reserved_packet_type_0) {
    auto r = decode_server(protocol_version::v5, wire({0x00, 0x00}));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, unknown_property_identifier) {
    for (int id : {0x00, 0x04, 0x2B, 0x7F}) {
        auto r = decode_server(protocol_version::v5, publish_with(wire({id, 0})));
        EXPECT_EQ(error_code(r), reason_code::malformed_packet) << id;
    }
}

TEST(decoder_malformed, property_not_allowed_in_packet_type) {
    // Session Expiry Interval is not a PUBLISH property.
    auto r = decode_server(protocol_version::v5, publish_with(wire({0x11}) + u32(1)));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, duplicate_property) {
    auto r = decode_server(protocol_version::v5,
                           publish_with(wire({0x02}) + u32(1) + wire({0x02}) + u32(2)));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder, user_property_may_repeat) {
    std::string up = wire({0x26}) + str("k") + str("v");
    auto r = decode_server(protocol_version::v5, publish_with(up + up));
    const publish* p = packet_as<publish>(r);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->properties.user_properties.size(), 2U);
}

TEST(decoder, subscription_identifier_may_repeat_in_publish_to_client) {
    auto r = decode_client(protocol_version::v5, publish_with(wire({0x0B, 1, 0x0B, 0x80, 0x01})));
    const publish* p = packet_as<publish>(r);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->properties.subscription_identifiers, (std::vector<std::uint32_t>{1, 128}));
}

TEST(decoder_malformed, property_length_exceeds_packet) {
    auto r = decode_server(protocol_version::v5, frame(0x30, str("t") + wire({0x05, 0x01, 0x00})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, property_overruns_property_length) {
    // Property length 2, but Message Expiry Interval needs 5 bytes (the rest is "payload").
    auto r =
        decode_server(protocol_version::v5, frame(0x30, str("t") + wire({0x02, 0x02}) + u32(1)));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, property_length_longer_than_4_bytes) {
    auto r = decode_server(protocol_version::v5,
                           frame(0x30, str("t") + wire({0xFF, 0xFF, 0xFF, 0xFF, 0x01})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, truncated_property_value) {
    auto r =
        decode_server(protocol_version::v5, frame(0x30, str("t") + wire({0x03, 0x02, 0x00, 0x00})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, property_string_with_invalid_utf8) {
    auto r = decode_server(protocol_version::v5,
                           publish_with(wire({0x03}) + str("\xF8\x88\x80\x80\x80")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, user_property_with_u0000) {
    auto r = decode_server(protocol_version::v5,
                           publish_with(wire({0x26}) + str("k") + str(std::string_view("\0", 1))));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, subscription_identifier_not_minimally_encoded) {
    auto r = decode_client(protocol_version::v5, publish_with(wire({0x0B, 0x81, 0x00})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder, binary_properties_may_hold_any_bytes) {
    auto r = decode_server(protocol_version::v5,
                           publish_with(wire({0x09}) + str(std::string_view("\0\xFF", 2))));
    const publish* p = packet_as<publish>(r);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->properties.correlation_data, std::string("\0\xFF", 2));
}

}  // namespace
}  // namespace starling::mqtt::test
