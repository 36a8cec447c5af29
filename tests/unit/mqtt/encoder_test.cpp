#include "mqtt/encoder.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

TEST(encoder, appends_to_the_buffer) {
    std::string out = "prefix";
    encode(pingreq{}, protocol_version::v5, out);
    encode(packet{pingresp{}}, protocol_version::v5, out);
    EXPECT_EQ(out, "prefix" + wire({0xC0, 0x00, 0xD0, 0x00}));
}

TEST(encoder, encode_publish_matches_encoding_the_struct) {
    properties props;
    props.content_type = "text/plain";
    props.message_expiry_interval = 30;
    std::string payload(1000, 'p');
    publish_header h{
        .topic = "a/b", .qos = qos::at_least_once, .packet_id = 5, .properties = &props};
    for (protocol_version v : all_versions) {
        std::string out;
        encode_publish(out, v, h, payload);
        publish p{.topic = "a/b",
                  .payload = payload,
                  .qos = qos::at_least_once,
                  .packet_id = 5,
                  .properties = props};
        EXPECT_EQ(out, encoded(p, v)) << to_string(v);
        EXPECT_EQ(out.size(), encoded_publish_size(v, h, payload.size()));
    }
}

TEST(encoder, encode_publish_adds_per_subscriber_identifiers_and_alias) {
    properties props;
    props.topic_alias = 9;
    props.subscription_identifiers = {1};
    const std::uint32_t extra[] = {7, 300};
    publish_header h{.topic = "",
                     .properties = &props,
                     .subscription_identifiers = extra,
                     .topic_alias = std::uint16_t{2}};
    std::string out;
    encode_publish(out, protocol_version::v5, h, "x");
    EXPECT_EQ(out.size(), encoded_publish_size(protocol_version::v5, h, 1));
    auto r = decode_client(protocol_version::v5, out);
    const publish* p = packet_as<publish>(r);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->properties.subscription_identifiers, (std::vector<std::uint32_t>{1, 7, 300}));
    EXPECT_EQ(p->properties.topic_alias, 2);
    EXPECT_EQ(p->payload, "x");
}

TEST(encoder, encode_publish_does_not_copy_the_publishers_topic_alias) {
    properties props;
    props.topic_alias = 9;
    props.content_type = "c";
    std::string out;
    encode_publish(out, protocol_version::v5, publish_header{.topic = "t", .properties = &props},
                   "");
    auto r = decode_client(protocol_version::v5, out);
    const publish* p = packet_as<publish>(r);
    ASSERT_NE(p, nullptr);
    EXPECT_FALSE(p->properties.topic_alias);
    EXPECT_EQ(p->properties.content_type, "c");
}

TEST(encoder, encode_publish_without_properties) {
    std::string out;
    encode_publish(out, protocol_version::v5, publish_header{.topic = "t"}, "");
    EXPECT_EQ(out, wire({0x30, 0x04, 0, 1, 't', 0}));
}

TEST(encoder, v3_publish_ignores_v5_fields) {
    properties props;
    props.user_properties = {{"k", "v"}};
    const std::uint32_t ids[] = {4};
    publish_header h{.topic = "t",
                     .properties = &props,
                     .subscription_identifiers = ids,
                     .topic_alias = std::uint16_t{3}};
    std::string out;
    encode_publish(out, protocol_version::v3_1_1, h, "p");
    EXPECT_EQ(out, wire({0x30, 0x04, 0, 1, 't', 'p'}));
}

TEST(encoder, skips_properties_the_packet_type_does_not_allow) {
    puback a{.packet_id = 1, .reason_code = reason_code::success};
    a.properties.session_expiry_interval = 5;
    a.properties.topic_alias = 1;
    EXPECT_EQ(encoded(a, protocol_version::v5), wire({0x40, 0x02, 0, 1}));
}

TEST(encoder, uses_multi_byte_remaining_length) {
    publish p{.topic = "t"};
    p.payload.assign(200'000, 'x');
    std::string out = encoded(p, protocol_version::v3_1_1);
    EXPECT_EQ(out.size(), 1 + 3 + 3 + 200'000U);
    EXPECT_EQ(out.substr(0, 4), wire({0x30, 0xC3, 0x9A, 0x0C}));  // 200003
}

TEST(encoder, encoded_size_matches_for_every_packet_type) {
    std::vector<packet> all = {connect{.client_id = "c"},
                               connack{},
                               publish{.topic = "t"},
                               puback{.packet_id = 1},
                               pubrec{.packet_id = 1},
                               pubrel{.packet_id = 1},
                               pubcomp{.packet_id = 1},
                               subscribe{.packet_id = 1, .subscriptions = {{"a", {}}}},
                               suback{.packet_id = 1, .reason_codes = {reason_code::success}},
                               unsubscribe{.packet_id = 1, .filters = {"a"}},
                               unsuback{.packet_id = 1, .reason_codes = {reason_code::success}},
                               pingreq{},
                               pingresp{},
                               disconnect{},
                               auth{}};
    for (protocol_version v : all_versions) {
        for (const packet& p : all) {
            std::string out;
            encode(p, v, out);
            EXPECT_EQ(out.size(), encoded_size(p, v)) << to_string(type_of(p));
        }
    }
}

TEST(packet, type_of_matches_the_wire_type) {
    EXPECT_EQ(type_of(packet{connect{}}), packet_type::connect);
    EXPECT_EQ(type_of(packet{auth{}}), packet_type::auth);
    EXPECT_EQ(packet_type_of<pubrel>, packet_type::pubrel);
    EXPECT_EQ(static_cast<int>(packet_type_of<unsuback>), 11);
    EXPECT_EQ(to_string(packet_type::pingresp), "PINGRESP");
}

}  // namespace
}  // namespace starling::mqtt::test
