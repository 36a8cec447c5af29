// Stream behaviour of the decoder: partial reads, many packets per read, the zero-copy buffer
// interface, the maximum packet size, sticky errors and roles.

#include "mqtt/decoder.h"

#include "mqtt_test_util.h"

#include <cstring>

namespace starling::mqtt::test {
namespace {

// A mix of packets a client sends, with 1-, 2- and 3-byte remaining lengths.
std::vector<packet> client_packets(protocol_version v) {
    std::vector<packet> packets;
    connect c;
    c.protocol_version = v;
    c.client_id = "stream";
    c.username = "u";
    packets.emplace_back(c);
    publish small;
    small.topic = "t";
    small.payload = "x";
    packets.emplace_back(small);
    publish medium;
    medium.topic = "m/1";
    medium.qos = qos::at_least_once;
    medium.packet_id = 1;
    medium.payload.assign(200, 'm');
    if (is_v5(v)) {
        medium.properties.message_expiry_interval = 5;
        medium.properties.user_properties = {{"k", "v"}};
    }
    packets.emplace_back(medium);
    publish large;
    large.topic = "l";
    large.qos = qos::exactly_once;
    large.packet_id = 2;
    large.payload.assign(20'000, 'l');
    packets.emplace_back(large);
    packets.emplace_back(subscribe{.packet_id = 3, .subscriptions = {{"a/#", {}}}});
    packets.emplace_back(pubrel{.packet_id = 2});
    packets.emplace_back(pingreq{});
    packets.emplace_back(unsubscribe{.packet_id = 4, .filters = {"a/#"}});
    packets.emplace_back(disconnect{});
    return packets;
}

std::string encode_all(const std::vector<packet>& packets, protocol_version v) {
    std::string out;
    for (const packet& p : packets) {
        encode(p, v, out);
    }
    return out;
}

TEST(decoder, needs_more_when_empty) {
    decoder d;
    EXPECT_TRUE(std::holds_alternative<need_more>(d.next()));
    d.feed(wire({0x10}));
    EXPECT_TRUE(std::holds_alternative<need_more>(d.next()));
}

TEST(decoder, partial_feeds_byte_by_byte) {
    for (protocol_version v : all_versions) {
        const std::vector<packet> expected = client_packets(v);
        const std::string bytes = encode_all(expected, v);
        decoder d;
        std::vector<packet> got;
        for (char byte : bytes) {
            d.feed(std::string_view(&byte, 1));
            for (;;) {
                decode_result r = d.next();
                if (std::holds_alternative<need_more>(r)) {
                    break;
                }
                ASSERT_TRUE(std::holds_alternative<packet>(r)) << error_detail(r);
                got.push_back(std::get<packet>(std::move(r)));
            }
        }
        EXPECT_EQ(got, expected) << to_string(v);
        EXPECT_EQ(d.buffered(), 0U);
    }
}

TEST(decoder, many_packets_in_one_buffer) {
    std::string bytes = connect_bytes(protocol_version::v5);
    for (int i = 0; i < 1000; ++i) {
        publish p;
        p.topic = "t/" + std::to_string(i);
        p.qos = qos::at_least_once;
        p.packet_id = static_cast<std::uint16_t>(i + 1);
        p.payload = std::to_string(i);
        encode(p, protocol_version::v5, bytes);
    }
    decoder d;
    d.feed(bytes);
    ASSERT_NE(packet_as<connect>(d.next()), nullptr);
    for (int i = 0; i < 1000; ++i) {
        decode_result r = d.next();
        const publish* p = packet_as<publish>(r);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->packet_id, i + 1);
        EXPECT_EQ(p->payload, std::to_string(i));
    }
    EXPECT_TRUE(std::holds_alternative<need_more>(d.next()));
}

TEST(decoder, prepare_and_commit_read_without_copy) {
    const std::vector<packet> expected = client_packets(protocol_version::v3_1_1);
    const std::string bytes = encode_all(expected, protocol_version::v3_1_1);
    decoder d;
    std::vector<packet> got;
    std::size_t offset = 0;
    while (offset < bytes.size()) {
        std::span<std::uint8_t> region = d.prepare(7);
        ASSERT_GE(region.size(), 7U);
        std::size_t n = std::min<std::size_t>({region.size(), 7, bytes.size() - offset});
        std::memcpy(region.data(), bytes.data() + offset, n);
        d.commit(n);
        offset += n;
        for (decode_result r = d.next(); std::holds_alternative<packet>(r); r = d.next()) {
            got.push_back(std::get<packet>(std::move(r)));
        }
    }
    EXPECT_EQ(got, expected);
}

TEST(decoder, prepare_makes_room_for_the_whole_pending_packet) {
    decoder d = server_after_connect(protocol_version::v5);
    publish p;
    p.topic = "t";
    p.payload.assign(100'000, 'p');
    std::string bytes = encoded(p, protocol_version::v5);
    d.feed(std::string_view(bytes).substr(0, 10));
    EXPECT_TRUE(std::holds_alternative<need_more>(d.next()));
    EXPECT_GE(d.prepare(1).size(), bytes.size() - 10);
}

TEST(decoder, oversize_packet_is_rejected_from_the_fixed_header) {
    decoder d = server_after_connect(protocol_version::v5, decoder_limits{.max_packet_size = 100});
    // PUBLISH with remaining length 1000: only the fixed header arrives.
    d.feed(wire({0x30, 0xE8, 0x07}));
    decode_result r = d.next();
    EXPECT_EQ(error_code(r), reason_code::packet_too_large);
    EXPECT_EQ(d.buffered(), 0U);
}

TEST(decoder, oversize_check_counts_the_fixed_header) {
    publish p;
    p.topic = "t";
    p.payload.assign(50, 'x');
    std::string bytes = encoded(p, protocol_version::v3_1_1);
    auto limit = static_cast<std::uint32_t>(bytes.size());
    decoder exact =
        server_after_connect(protocol_version::v3_1_1, decoder_limits{.max_packet_size = limit});
    exact.feed(bytes);
    EXPECT_NE(packet_as<publish>(exact.next()), nullptr);
    decoder one_less = server_after_connect(protocol_version::v3_1_1,
                                            decoder_limits{.max_packet_size = limit - 1});
    one_less.feed(bytes);
    EXPECT_EQ(error_code(one_less.next()), reason_code::packet_too_large);
}

TEST(decoder, set_max_packet_size_applies_to_the_next_packet) {
    decoder d = server_after_connect(protocol_version::v5);
    d.set_max_packet_size(4);
    d.feed(wire({0x30, 0x05, 0, 1, 't', 0, 'x'}));
    EXPECT_EQ(error_code(d.next()), reason_code::packet_too_large);
}

TEST(decoder, four_byte_remaining_length_is_accepted) {
    decoder d =
        server_after_connect(protocol_version::v3_1_1, decoder_limits{.max_packet_size = 1000});
    // 268435455 = 0xFF 0xFF 0xFF 0x7F, the largest remaining length: too large, but parsed.
    d.feed(wire({0x30, 0xFF, 0xFF, 0xFF, 0x7F}));
    decode_result r = d.next();
    EXPECT_EQ(error_code(r), reason_code::packet_too_large);
}

TEST(decoder, error_is_sticky) {
    decoder d = server_after_connect(protocol_version::v5);
    d.feed(wire({0x62, 0x02, 0x00, 0x00}));  // PUBREL with packet id 0
    decode_result first = d.next();
    EXPECT_EQ(error_code(first), reason_code::malformed_packet);
    EXPECT_TRUE(d.failed());
    d.feed(wire({0xC0, 0x00}));
    decode_result again = d.next();
    EXPECT_EQ(error_code(again), reason_code::malformed_packet);
    EXPECT_EQ(error_detail(again), error_detail(first));
    EXPECT_EQ(d.buffered(), 0U);
}

TEST(decoder, error_detail_names_the_packet_type) {
    auto r = decode_server(protocol_version::v5, wire({0x60, 0x02, 0x00, 0x01}));
    EXPECT_EQ(error_detail(r), "PUBREL: reserved fixed-header flags");
}

TEST(decoder, client_role_requires_a_version) {
    decoder d(decoder_limits{}, decoder_role::client);
    d.feed(wire({0xD0, 0x00}));
    EXPECT_EQ(error_code(d.next()), reason_code::implementation_specific_error);
}

TEST(decoder, client_role_decodes_server_packets) {
    decoder d = client_at(protocol_version::v5);
    std::string bytes;
    encode(connack{.session_present = false}, protocol_version::v5, bytes);
    encode(suback{.packet_id = 1, .reason_codes = {reason_code::granted_qos_1}},
           protocol_version::v5, bytes);
    encode(pingresp{}, protocol_version::v5, bytes);
    d.feed(bytes);
    EXPECT_NE(packet_as<connack>(d.next()), nullptr);
    EXPECT_NE(packet_as<suback>(d.next()), nullptr);
    EXPECT_NE(packet_as<pingresp>(d.next()), nullptr);
    EXPECT_EQ(d.role(), decoder_role::client);
}

TEST(decoder, shrink_keeps_working) {
    decoder d = server_after_connect(protocol_version::v3_1_1);
    d.shrink();
    d.feed(wire({0xC0}));
    d.shrink();  // a partial packet is kept
    d.feed(wire({0x00}));
    EXPECT_NE(packet_as<pingreq>(d.next()), nullptr);
}

TEST(decoder, is_movable) {
    decoder a = server_after_connect(protocol_version::v3_1_1);
    a.feed(wire({0xC0}));
    decoder b = std::move(a);
    b.feed(wire({0x00}));
    EXPECT_NE(packet_as<pingreq>(b.next()), nullptr);
    EXPECT_EQ(b.version(), protocol_version::v3_1_1);
}

}  // namespace
}  // namespace starling::mqtt::test

namespace starling::mqtt::test {
namespace {

// mqtt.max-user-properties: a packet (or a CONNECT's will) with more User Properties than the
// limit is refused as "not accepted by this server" (0x83); at the limit it decodes.
TEST(decoder, user_properties_beyond_the_limit_are_refused) {
    const auto with_properties = [](std::size_t n, bool in_will) {
        connect c;
        c.protocol_version = protocol_version::v5;
        c.client_id = "props";
        auto& list =
            in_will ? c.will.emplace().properties.user_properties : c.properties.user_properties;
        if (in_will) {
            c.will->topic = "w";
        }
        for (std::size_t i = 0; i < n; ++i) {
            list.push_back({"k" + std::to_string(i), "v"});
        }
        std::string bytes;
        encode(c, protocol_version::v5, bytes);
        return bytes;
    };
    for (bool in_will : {false, true}) {
        decoder at_limit(decoder_limits{.max_user_properties = 8});
        at_limit.feed(with_properties(8, in_will));
        EXPECT_TRUE(std::holds_alternative<packet>(at_limit.next()));

        decoder over(decoder_limits{.max_user_properties = 8});
        over.feed(with_properties(9, in_will));
        auto r = over.next();
        ASSERT_TRUE(std::holds_alternative<decode_error>(r)) << "in will: " << in_will;
        EXPECT_EQ(std::get<decode_error>(r).code, reason_code::implementation_specific_error);
    }
    decoder unlimited;
    unlimited.feed(with_properties(1000, false));
    EXPECT_TRUE(std::holds_alternative<packet>(unlimited.next()));
}

}  // namespace
}  // namespace starling::mqtt::test
