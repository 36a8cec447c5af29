#include "mqtt/packet/subscribe.h"

#include "mqtt_test_util.h"

namespace starling::mqtt::test {
namespace {

std::string sub_body_v5(std::string_view filter, int options) {
    return u16(1) + props() + str(filter) + wire({options});
}

TEST(subscribe, encodes_3_1_1_byte_for_byte) {
    subscribe s{.packet_id = 10, .subscriptions = {{"a/+", {.qos = qos::at_least_once}}}};
    EXPECT_EQ(encoded(s, protocol_version::v3_1_1),
              wire({0x82, 0x08, 0, 10, 0, 3, 'a', '/', '+', 0x01}));
}

TEST(subscribe, encodes_v5_options) {
    subscribe s{.packet_id = 1,
                .subscriptions = {{"t",
                                   {.qos = qos::exactly_once,
                                    .no_local = true,
                                    .retain_as_published = true,
                                    .retain_handling = retain_handling::do_not_send}}}};
    EXPECT_EQ(encoded(s, protocol_version::v5), wire({0x82, 0x07, 0, 1, 0, 0, 1, 't', 0x2E}));
}

TEST(subscribe, round_trips_at_every_version) {
    for (protocol_version v : all_versions) {
        subscribe s{.packet_id = 300,
                    .subscriptions = {{"a/#", {.qos = qos::at_most_once}},
                                      {"+/b", {.qos = qos::exactly_once}},
                                      {"$share/g/x/y", {.qos = qos::at_least_once}}}};
        EXPECT_EQ(round_trip(s, v, receiver::server), s) << to_string(v);
    }
}

TEST(subscribe, round_trips_v5_options_and_properties) {
    subscribe s{.packet_id = 2};
    s.subscriptions = {
        {"a", {qos::at_least_once, true, false, retain_handling::send_on_subscribe}},
        {"b", {qos::exactly_once, false, true, retain_handling::do_not_send}},
        {"c", {qos::at_most_once, true, true, retain_handling::send_if_new_subscription}}};
    s.properties.subscription_identifiers = {42};
    s.properties.user_properties = {{"k", "v"}};
    EXPECT_EQ(round_trip(s, protocol_version::v5, receiver::server), s);
}

TEST(subscribe, v3_encoding_drops_v5_options) {
    subscribe s{
        .packet_id = 2,
        .subscriptions = {{"a", {qos::at_least_once, true, true, retain_handling::do_not_send}}}};
    subscribe expected = s;
    expected.subscriptions[0].options = {.qos = qos::at_least_once};
    EXPECT_EQ(round_trip(s, protocol_version::v3_1_1, receiver::server), expected);
}

TEST(decoder_malformed, reserved_flags_on_subscribe) {
    for (int first : {0x80, 0x81, 0x83, 0x8A}) {
        auto r =
            decode_server(protocol_version::v3_1_1, frame(first, u16(1) + str("a") + wire({0})));
        EXPECT_EQ(error_code(r), reason_code::malformed_packet) << first;
    }
}

TEST(decoder_malformed, subscribe_dup_flag_accepted_in_3_1) {
    auto r = decode_server(protocol_version::v3_1, frame(0x8A, u16(1) + str("a") + wire({0})));
    EXPECT_NE(packet_as<subscribe>(r), nullptr);
}

TEST(decoder_malformed, empty_subscribe_payload) {
    auto v3 = decode_server(protocol_version::v3_1_1, frame(0x82, u16(1)));
    EXPECT_EQ(error_code(v3), reason_code::protocol_error);
    auto v5 = decode_server(protocol_version::v5, frame(0x82, u16(1) + props()));
    EXPECT_EQ(error_code(v5), reason_code::protocol_error);
}

TEST(decoder_malformed, subscribe_packet_id_0) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x82, u16(0) + str("a") + wire({0})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, reserved_subscription_option_bits_3_1_1) {
    for (int options : {0x04, 0x08, 0x10, 0x80}) {
        auto r = decode_server(protocol_version::v3_1_1,
                               frame(0x82, u16(1) + str("a") + wire({options})));
        EXPECT_EQ(error_code(r), reason_code::malformed_packet) << options;
    }
}

TEST(decoder_malformed, reserved_subscription_option_bits_v5) {
    for (int options : {0x40, 0x80}) {
        auto r = decode_server(protocol_version::v5, frame(0x82, sub_body_v5("a", options)));
        EXPECT_EQ(error_code(r), reason_code::malformed_packet) << options;
    }
}

TEST(decoder_malformed, subscription_qos_3) {
    auto v3 = decode_server(protocol_version::v3_1_1, frame(0x82, u16(1) + str("a") + wire({3})));
    EXPECT_EQ(error_code(v3), reason_code::malformed_packet);
    auto v5 = decode_server(protocol_version::v5, frame(0x82, sub_body_v5("a", 3)));
    EXPECT_EQ(error_code(v5), reason_code::protocol_error);
}

TEST(decoder_malformed, retain_handling_3) {
    auto r = decode_server(protocol_version::v5, frame(0x82, sub_body_v5("a", 0x30)));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, no_local_on_shared_subscription) {
    auto r = decode_server(protocol_version::v5, frame(0x82, sub_body_v5("$share/g/a", 0x04)));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, subscribe_invalid_topic_filter) {
    for (std::string_view f : {"a/#/b", "a+", "#a", "", "$share/g", "$share//a", "$share/g+/a"}) {
        auto r = decode_server(protocol_version::v5, frame(0x82, sub_body_v5(f, 0)));
        EXPECT_EQ(error_code(r), reason_code::topic_filter_invalid) << f;
    }
}

TEST(decoder_malformed, subscribe_filter_with_invalid_utf8) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x82, u16(1) + str("\x80") + wire({0})));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, subscribe_missing_options_byte) {
    auto r = decode_server(protocol_version::v3_1_1, frame(0x82, u16(1) + str("a")));
    EXPECT_EQ(error_code(r), reason_code::malformed_packet);
}

TEST(decoder_malformed, subscription_identifier_0) {
    auto r = decode_server(protocol_version::v5,
                           frame(0x82, u16(1) + props(wire({0x0B, 0})) + str("a") + wire({0})));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, subscription_identifier_twice_in_subscribe) {
    auto r =
        decode_server(protocol_version::v5,
                      frame(0x82, u16(1) + props(wire({0x0B, 1, 0x0B, 2})) + str("a") + wire({0})));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

TEST(decoder_malformed, subscribe_received_by_client) {
    auto r = decode_client(protocol_version::v3_1_1, frame(0x82, u16(1) + str("a") + wire({0})));
    EXPECT_EQ(error_code(r), reason_code::protocol_error);
}

}  // namespace
}  // namespace starling::mqtt::test
