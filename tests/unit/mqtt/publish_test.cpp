#include "mqtt/packet/publish.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

publish sample(qos q) {
    publish p;
    p.topic = "sensors/1/temp";
    p.payload = std::string("21.5\0x", 6);
    p.qos = q;
    p.retain = true;
    p.dup = q != qos::at_most_once;
    p.packet_id = q == qos::at_most_once ? 0 : 77;
    return p;
}

TEST(publish, encodes_qos0_byte_for_byte) {
    publish p;
    p.topic = "a/b";
    p.payload = "hi";
    EXPECT_EQ(encoded(p, protocol_version::v3_1_1),
              wire({0x30, 0x07, 0, 3, 'a', '/', 'b', 'h', 'i'}));
    EXPECT_EQ(encoded(p, protocol_version::v5),
              wire({0x30, 0x08, 0, 3, 'a', '/', 'b', 0, 'h', 'i'}));
}

TEST(publish, encodes_flags) {
    publish p = sample(qos::exactly_once);
    EXPECT_EQ(static_cast<std::uint8_t>(encoded(p, protocol_version::v3_1_1)[0]), 0x3D);
}

TEST(publish, round_trips_every_qos_at_every_version_both_directions) {
    for (protocol_version v : all_versions) {
        for (qos q : {qos::at_most_once, qos::at_least_once, qos::exactly_once}) {
            publish p = sample(q);
            EXPECT_EQ(round_trip(p, v, receiver::server), p) << to_string(v);
            EXPECT_EQ(round_trip(p, v, receiver::client), p) << to_string(v);
        }
    }
}

TEST(publish, round_trips_every_v5_publish_property) {
    publish p = sample(qos::at_least_once);
    p.properties.payload_format_indicator = 1;
    p.properties.message_expiry_interval = 60;
    p.properties.content_type = "application/json";
    p.properties.response_topic = "replies/1";
    p.properties.correlation_data = std::string("\x00\x01", 2);
    p.properties.topic_alias = 4;
    p.properties.user_properties = {{"x", "1"}, {"y", ""}};
    EXPECT_EQ(round_trip(p, protocol_version::v5, receiver::server), p);
    p.properties.subscription_identifiers = {1, 268'435'455};
    EXPECT_EQ(round_trip(p, protocol_version::v5, receiver::client), p);
}

TEST(publish, empty_topic_with_topic_alias_is_legal_in_v5) {
    publish p;
    p.properties.topic_alias = 1;
    p.payload = "x";
    EXPECT_EQ(round_trip(p, protocol_version::v5, receiver::server), p);
}

TEST(publish, large_payload_round_trips) {
    publish p;
    p.topic = "big";
    p.payload.assign(300'000, 'z');
    EXPECT_EQ(round_trip(p, protocol_version::v5, receiver::server), p);
}

TEST(publish, dup_is_not_written_at_qos0) {
    publish p;
    p.topic = "t";
    p.dup = true;
    EXPECT_EQ(static_cast<std::uint8_t>(encoded(p, protocol_version::v5)[0]), 0x30);
}

TEST(decoder_malformed, publish_qos_3) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x36, str("t") + u16(1)));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, publish_dup_on_qos0) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x38, str("t")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, publish_packet_id_0) {
    auto r = decode_server(protocol_version::v5, frame(0x32, str("t") + u16(0) + props()));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, publish_topic_with_wildcard) {
    for (std::string_view topic : {"a/+", "#", "a+b"}) {
        auto r = decode_server(protocol_version::v5, frame(0x30, str(topic) + props()));
        EXPECT_EQ(error_code(r), reason_code::topic_name_invalid) << topic;
    }
}

TEST(decoder_malformed, publish_empty_topic_in_3_1_1) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x30, str("") + "x"));
    EXPECT_EQ(error_code(r), reason_code::topic_name_invalid);
}

TEST(decoder_malformed, publish_empty_topic_without_alias_in_v5) {
    auto r = decode_server(protocol_version::v5, frame(0x30, str("") + props()));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, publish_topic_with_invalid_utf8) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x30, str("a\xFF")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, publish_topic_with_u0000) {
    auto r =
        decode_server(protocol_version::v5, frame(0x30, str(std::string_view("a\0", 2)) + props()));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, publish_topic_with_surrogate) {
    auto r = decode_server(protocol_version::v5, frame(0x30, str("\xED\xBF\xBF") + props()));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, publish_topic_length_beyond_packet) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x30, u16(10) + "abc"));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, topic_alias_0) {
    auto r =
        decode_server(protocol_version::v5, frame(0x30, str("t") + props(wire({0x23}) + u16(0))));
    EXPECT_EQ(error_code(r), reason_code::topic_alias_invalid);
}

TEST(decoder_malformed, subscription_identifier_in_publish_from_client) {
    auto r = decode_server(protocol_version::v5, frame(0x30, str("t") + props(wire({0x0B, 1}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, subscription_identifier_0_in_publish) {
    auto r = decode_client(protocol_version::v5, frame(0x30, str("t") + props(wire({0x0B, 0}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, payload_format_indicator_other_than_0_or_1) {
    auto r = decode_server(protocol_version::v5, frame(0x30, str("t") + props(wire({0x01, 2}))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, response_topic_with_wildcard) {
    auto r = decode_server(protocol_version::v5,
                           frame(0x30, str("t") + props(wire({0x08}) + str("r/#"))));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, payload_not_utf8_with_format_indicator) {
    decoder d =
        server_after_connect(protocol_version::v5, decoder_limits{.validate_payload_format = true});
    d.feed(frame(0x30, str("t") + props(wire({0x01, 1})) + "\xC3\x28"));
    EXPECT_EQ(error_code(d.next()), reason_code::payload_format_invalid);
}

TEST(publish, payload_format_is_not_checked_unless_asked) {
    auto r = decode_server(protocol_version::v5,
                           frame(0x30, str("t") + props(wire({0x01, 1})) + "\xC3\x28"));
    const publish* p = packet_as<publish>(r);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->payload, "\xC3\x28");
}

TEST(publish, utf8_payload_passes_format_check) {
    decoder d =
        server_after_connect(protocol_version::v5, decoder_limits{.validate_payload_format = true});
    d.feed(frame(0x30, str("t") + props(wire({0x01, 1})) + "gr\xC3\xBC\xC3\x9F"));
    EXPECT_NE(packet_as<publish>(d.next()), nullptr);
}

}  // namespace
}  // namespace starling::mqtt::test
