#include "net/proxy_protocol.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace starling::net::proxy_protocol {
namespace {

using bytes = std::vector<std::uint8_t>;

bytes of(std::string_view text) { return bytes(text.begin(), text.end()); }

bytes operator+(bytes a, const bytes& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A v2 header: signature, version/command, family/transport, length, then `body`.
bytes v2(std::uint8_t ver_cmd, std::uint8_t fam, const bytes& body) {
    bytes out(std::begin(v2_signature), std::end(v2_signature));
    out.push_back(ver_cmd);
    out.push_back(fam);
    out.push_back(static_cast<std::uint8_t>(body.size() >> 8));
    out.push_back(static_cast<std::uint8_t>(body.size() & 0xFF));
    return out + body;
}

constexpr std::uint8_t proxy_cmd = 0x21;
constexpr std::uint8_t local_cmd = 0x20;
constexpr std::uint8_t tcp4 = 0x11;
constexpr std::uint8_t tcp6 = 0x21;

bytes inet_block() {
    // 192.0.2.10:51000 → 198.51.100.7:1883
    return {192, 0, 2, 10, 198, 51, 100, 7, 0xC7, 0x38, 0x07, 0x5B};
}

bytes inet6_block() {
    // [2001:db8::1]:443 → [2001:db8::ff00:42:8329]:8883
    // One initializer list: growing a 32-byte vector in place trips a false -Warray-bounds in
    // GCC 12 at -O2 (the release build).
    return {0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,    0,    0,    0,    0,    0,
            0,    0,    0,    0x01, 0x20, 0x01, 0x0d, 0xb8, 0,    0,    0,    0,
            0,    0,    0xff, 0,    0,    0x42, 0x83, 0x29, 0x01, 0xBB, 0x22, 0xB3};
}

bytes tlv(std::uint8_t type, std::size_t length) {
    bytes b = {type, static_cast<std::uint8_t>(length >> 8),
               static_cast<std::uint8_t>(length & 0xFF)};
    b.resize(b.size() + length, 'x');
    return b;
}

// Feeds everything at once and expects a header that used all of `input`.
header parse_whole(const bytes& input) {
    parser p;
    auto r = p.feed(input);
    EXPECT_TRUE(std::holds_alternative<header>(r))
        << (std::holds_alternative<std::error_code>(r) ? p.detail() : "need more");
    EXPECT_EQ(p.consumed(), input.size());
    EXPECT_EQ(p.header_size(), input.size());
    return std::holds_alternative<header>(r) ? std::get<header>(r) : header{};
}

// Feeds everything at once and returns the error (or a default code when none).
std::error_code parse_error_of(const bytes& input, std::string* detail = nullptr) {
    parser p;
    auto r = p.feed(input);
    if (detail != nullptr) {
        *detail = p.detail();
    }
    EXPECT_TRUE(std::holds_alternative<std::error_code>(r)) << "no error";
    return std::holds_alternative<std::error_code>(r) ? std::get<std::error_code>(r)
                                                      : std::error_code{};
}

// ---- v1 ----

TEST(proxy_protocol_v1, tcp4) {
    header h = parse_whole(of("PROXY TCP4 192.0.2.10 198.51.100.7 51000 1883\r\n"));
    EXPECT_FALSE(h.local);
    EXPECT_EQ(h.source_address, "192.0.2.10:51000");
    EXPECT_EQ(h.destination_address, "198.51.100.7:1883");
}

TEST(proxy_protocol_v1, tcp6_brackets_and_canonical_form) {
    header h = parse_whole(of("PROXY TCP6 2001:DB8:0:0::1 ::1 65535 0\r\n"));
    EXPECT_EQ(h.source_address, "[2001:db8::1]:65535");
    EXPECT_EQ(h.destination_address, "[::1]:0");
}

TEST(proxy_protocol_v1, tcp6_ipv4_mapped) {
    header h = parse_whole(of("PROXY TCP6 ::ffff:192.0.2.1 ::1 1 2\r\n"));
    EXPECT_EQ(h.source_address, "[::ffff:192.0.2.1]:1");
}

TEST(proxy_protocol_v1, unknown_keeps_socket_address) {
    header h = parse_whole(of("PROXY UNKNOWN\r\n"));
    EXPECT_EQ(h, header{});
}

TEST(proxy_protocol_v1, unknown_ignores_the_rest_of_the_line) {
    header h = parse_whole(of("PROXY UNKNOWN ffff:f...f:ffff whatever 1 2\r\n"));
    EXPECT_EQ(h, header{});
}

TEST(proxy_protocol_v1, longest_allowed_line_is_107_bytes) {
    // The spec's worst case: UNKNOWN with two full-length IPv6 addresses and 5-digit ports.
    const std::string addresses =
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 "
        "65535\r\n";
    const bytes unknown = of("PROXY UNKNOWN " + addresses);
    ASSERT_EQ(unknown.size(), max_v1_header_size);
    EXPECT_EQ(parse_whole(unknown), header{});
    header h = parse_whole(of("PROXY TCP6 " + addresses));
    EXPECT_EQ(h.source_address, "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535");
}

TEST(proxy_protocol_v1, no_crlf_within_107_bytes_is_too_long) {
    parser p;
    bytes line = of("PROXY UNKNOWN ");
    line.resize(200, 'a');
    auto r = p.feed(line);
    ASSERT_TRUE(std::holds_alternative<std::error_code>(r));
    EXPECT_EQ(std::get<std::error_code>(r), parse_error::too_long);
    EXPECT_EQ(p.consumed(), max_v1_header_size);  // never looked further than the limit
}

TEST(proxy_protocol_v1, lf_without_cr_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n")), parse_error::malformed);
}

TEST(proxy_protocol_v1, cr_without_lf_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rx")), parse_error::malformed);
}

TEST(proxy_protocol_v1, missing_field_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n")), parse_error::malformed);
}

TEST(proxy_protocol_v1, extra_field_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n")), parse_error::malformed);
}

TEST(proxy_protocol_v1, double_space_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n")), parse_error::malformed);
}

TEST(proxy_protocol_v1, trailing_space_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n")), parse_error::malformed);
}

TEST(proxy_protocol_v1, bad_ipv4_source_is_malformed_and_named) {
    std::string detail;
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n"), &detail),
              parse_error::malformed);
    EXPECT_NE(detail.find("source address '1.2.3.256'"), std::string::npos) << detail;
}

TEST(proxy_protocol_v1, ipv6_address_under_tcp4_is_malformed) {
    std::string detail;
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 ::1 1 2\r\n"), &detail),
              parse_error::malformed);
    EXPECT_NE(detail.find("destination address"), std::string::npos) << detail;
}

TEST(proxy_protocol_v1, ipv4_address_under_tcp6_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP6 1.2.3.4 ::1 1 2\r\n")), parse_error::malformed);
}

TEST(proxy_protocol_v1, port_over_65535_is_malformed) {
    std::string detail;
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n"), &detail),
              parse_error::malformed);
    EXPECT_NE(detail.find("source port '65536'"), std::string::npos) << detail;
}

TEST(proxy_protocol_v1, port_with_leading_zero_is_malformed) {
    std::string detail;
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 1 080\r\n"), &detail),
              parse_error::malformed);
    EXPECT_NE(detail.find("destination port '080'"), std::string::npos) << detail;
}

TEST(proxy_protocol_v1, non_numeric_port_is_malformed) {
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n")), parse_error::malformed);
    EXPECT_EQ(parse_error_of(of("PROXY TCP4 1.2.3.4 5.6.7.8 1a 2\r\n")), parse_error::malformed);
}

TEST(proxy_protocol_v1, unknown_protocol_word_is_unsupported) {
    EXPECT_EQ(parse_error_of(of("PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n")), parse_error::unsupported);
    EXPECT_EQ(parse_error_of(of("PROXY UNKNOWNX\r\n")), parse_error::unsupported);
}

// ---- detection ----

TEST(proxy_protocol_detect, mqtt_connect_is_not_proxy_protocol_after_one_byte) {
    parser p;
    const bytes connect = {0x10, 0x0D, 0x00, 0x04, 'M', 'Q', 'T', 'T'};
    auto r = p.feed(connect);
    ASSERT_TRUE(std::holds_alternative<std::error_code>(r));
    EXPECT_EQ(std::get<std::error_code>(r), parse_error::not_proxy_protocol);
    EXPECT_EQ(p.consumed(), 1U);
}

TEST(proxy_protocol_detect, tls_client_hello_is_not_proxy_protocol) {
    EXPECT_EQ(parse_error_of({0x16, 0x03, 0x01}), parse_error::not_proxy_protocol);
}

TEST(proxy_protocol_detect, v1_prefix_mismatch_is_not_proxy_protocol) {
    EXPECT_EQ(parse_error_of(of("PROXX TCP4")), parse_error::not_proxy_protocol);
    EXPECT_EQ(parse_error_of(of("PROXY\r\n")), parse_error::not_proxy_protocol);
}

TEST(proxy_protocol_detect, v2_signature_mismatch_is_not_proxy_protocol) {
    bytes b(std::begin(v2_signature), std::end(v2_signature));
    b[11] = 0x0B;
    EXPECT_EQ(parse_error_of(b), parse_error::not_proxy_protocol);
}

TEST(proxy_protocol_detect, partial_signature_needs_more_then_mismatch_fails) {
    parser p;
    EXPECT_TRUE(std::holds_alternative<parser::need_more>(p.feed(of("PRO"))));
    EXPECT_EQ(p.consumed(), 3U);
    auto r = p.feed(bytes{0x0D, 0x0A});  // "PRO" then CR: neither signature any more
    ASSERT_TRUE(std::holds_alternative<std::error_code>(r));
    EXPECT_EQ(std::get<std::error_code>(r), parse_error::not_proxy_protocol);
}

TEST(proxy_protocol_detect, empty_feed_needs_more) {
    parser p;
    EXPECT_TRUE(std::holds_alternative<parser::need_more>(p.feed({})));
    EXPECT_EQ(p.consumed(), 0U);
}

// ---- v2 ----

TEST(proxy_protocol_v2, proxy_ipv4) {
    header h = parse_whole(v2(proxy_cmd, tcp4, inet_block()));
    EXPECT_FALSE(h.local);
    EXPECT_EQ(h.source_address, "192.0.2.10:51000");
    EXPECT_EQ(h.destination_address, "198.51.100.7:1883");
}

TEST(proxy_protocol_v2, proxy_ipv6) {
    header h = parse_whole(v2(proxy_cmd, tcp6, inet6_block()));
    EXPECT_EQ(h.source_address, "[2001:db8::1]:443");
    EXPECT_EQ(h.destination_address, "[2001:db8::ff00:42:8329]:8883");
}

TEST(proxy_protocol_v2, local_without_addresses) {
    header h = parse_whole(v2(local_cmd, 0x00, {}));
    EXPECT_TRUE(h.local);
    EXPECT_TRUE(h.source_address.empty());
}

TEST(proxy_protocol_v2, local_discards_its_address_block_and_tlvs) {
    header h = parse_whole(v2(local_cmd, tcp4, inet_block() + tlv(0x04, 2)));
    EXPECT_TRUE(h.local);
    EXPECT_TRUE(h.source_address.empty());
    EXPECT_TRUE(h.destination_address.empty());
}

TEST(proxy_protocol_v2, tlvs_are_skipped) {
    // ALPN, authority, NOOP with an empty value, a custom type.
    bytes body = inet_block() + tlv(0x01, 2) + tlv(0x02, 11) + tlv(0x04, 0) + tlv(0xE0, 100);
    header h = parse_whole(v2(proxy_cmd, tcp4, body));
    EXPECT_EQ(h.source_address, "192.0.2.10:51000");
}

TEST(proxy_protocol_v2, tlvs_up_to_the_cap_are_accepted) {
    header h = parse_whole(v2(proxy_cmd, tcp6, inet6_block() + tlv(0xE0, max_v2_tlv_bytes - 3)));
    EXPECT_EQ(h.source_address, "[2001:db8::1]:443");
}

TEST(proxy_protocol_v2, length_over_the_cap_is_too_long_before_buffering_the_body) {
    parser p;
    const bytes big = v2(proxy_cmd, tcp4, inet_block() + tlv(0xE0, max_v2_tlv_bytes - 2));
    auto r = p.feed(big);
    ASSERT_TRUE(std::holds_alternative<std::error_code>(r));
    EXPECT_EQ(std::get<std::error_code>(r), parse_error::too_long);
    EXPECT_EQ(p.consumed(), v2_fixed_size);  // decided on the fixed part alone
}

TEST(proxy_protocol_v2, tlv_running_past_the_header_is_malformed) {
    bytes body = inet_block() + tlv(0x01, 4);
    body.pop_back();  // the declared TLV length no longer fits
    EXPECT_EQ(parse_error_of(v2(proxy_cmd, tcp4, body)), parse_error::malformed);
}

TEST(proxy_protocol_v2, truncated_tlv_header_is_malformed) {
    EXPECT_EQ(parse_error_of(v2(proxy_cmd, tcp4, inet_block() + bytes{0x01, 0x00})),
              parse_error::malformed);
}

TEST(proxy_protocol_v2, length_shorter_than_address_block_is_malformed) {
    bytes body = inet_block();
    body.resize(11);
    std::string detail;
    EXPECT_EQ(parse_error_of(v2(proxy_cmd, tcp4, body), &detail), parse_error::malformed);
    EXPECT_NE(detail.find("address block"), std::string::npos) << detail;
}

TEST(proxy_protocol_v2, version_other_than_2_is_unsupported) {
    EXPECT_EQ(parse_error_of(v2(0x11, tcp4, inet_block())), parse_error::unsupported);
    EXPECT_EQ(parse_error_of(v2(0x31, tcp4, inet_block())), parse_error::unsupported);
}

TEST(proxy_protocol_v2, unknown_command_is_unsupported) {
    EXPECT_EQ(parse_error_of(v2(0x22, tcp4, inet_block())), parse_error::unsupported);
}

TEST(proxy_protocol_v2, unknown_family_is_unsupported) {
    EXPECT_EQ(parse_error_of(v2(proxy_cmd, 0x41, inet_block())), parse_error::unsupported);
}

TEST(proxy_protocol_v2, unknown_transport_is_unsupported) {
    EXPECT_EQ(parse_error_of(v2(proxy_cmd, 0x13, inet_block())), parse_error::unsupported);
}

TEST(proxy_protocol_v2, unspec_family_falls_back_to_socket_address) {
    header h = parse_whole(v2(proxy_cmd, 0x00, tlv(0x04, 3)));
    EXPECT_EQ(h, header{});
}

TEST(proxy_protocol_v2, unix_family_falls_back_to_socket_address) {
    header h = parse_whole(v2(proxy_cmd, 0x31, bytes(216, 'p')));
    EXPECT_EQ(h, header{});
}

TEST(proxy_protocol_v2, datagram_transport_falls_back_to_socket_address) {
    header h = parse_whole(v2(proxy_cmd, 0x12, inet_block()));
    EXPECT_EQ(h, header{});
}

// ---- incremental feeding and leftovers ----

void expect_byte_at_a_time(const bytes& input, const header& expected) {
    parser p;
    for (std::size_t i = 0; i < input.size(); ++i) {
        auto r = p.feed(std::span(input).subspan(i, 1));
        EXPECT_EQ(p.consumed(), 1U);
        if (i + 1 < input.size()) {
            ASSERT_TRUE(std::holds_alternative<parser::need_more>(r)) << "at byte " << i;
        } else {
            ASSERT_TRUE(std::holds_alternative<header>(r));
            EXPECT_EQ(std::get<header>(r), expected);
        }
    }
    EXPECT_EQ(p.header_size(), input.size());
}

TEST(proxy_protocol_incremental, v1_byte_at_a_time) {
    const bytes line = of("PROXY TCP4 192.0.2.10 198.51.100.7 51000 1883\r\n");
    expect_byte_at_a_time(line, parse_whole(line));
}

TEST(proxy_protocol_incremental, v2_byte_at_a_time) {
    const bytes header_bytes = v2(proxy_cmd, tcp6, inet6_block() + tlv(0x02, 20));
    expect_byte_at_a_time(header_bytes, parse_whole(header_bytes));
}

TEST(proxy_protocol_incremental, v1_leftover_bytes_are_not_consumed) {
    const bytes line = of("PROXY TCP4 192.0.2.10 198.51.100.7 51000 1883\r\n");
    const bytes connect = {0x10, 0x0D, 0x00, 0x04, 'M', 'Q', 'T', 'T'};
    const bytes input = line + connect;
    parser p;
    auto r = p.feed(input);
    ASSERT_TRUE(std::holds_alternative<header>(r));
    EXPECT_EQ(p.consumed(), line.size());
    const auto rest = std::span(input).subspan(p.consumed());
    EXPECT_EQ(bytes(rest.begin(), rest.end()), connect);
}

TEST(proxy_protocol_incremental, v2_leftover_bytes_across_two_feeds) {
    const bytes header_bytes = v2(proxy_cmd, tcp4, inet_block() + tlv(0x01, 5));
    const bytes first(header_bytes.begin(), header_bytes.begin() + 20);
    const bytes second = bytes(header_bytes.begin() + 20, header_bytes.end()) + bytes{0x16, 0x03};
    parser p;
    ASSERT_TRUE(std::holds_alternative<parser::need_more>(p.feed(first)));
    EXPECT_EQ(p.consumed(), first.size());
    auto r = p.feed(second);
    ASSERT_TRUE(std::holds_alternative<header>(r));
    EXPECT_EQ(p.consumed(), header_bytes.size() - 20);  // of the second span only
    EXPECT_EQ(p.header_size(), header_bytes.size());
    EXPECT_EQ(second.size() - p.consumed(), 2U);
}

TEST(proxy_protocol_incremental, v2_zero_length_header_completes_on_fixed_part) {
    const bytes input = v2(local_cmd, 0x00, {}) + bytes{0x10};
    parser p;
    auto r = p.feed(input);
    ASSERT_TRUE(std::holds_alternative<header>(r));
    EXPECT_EQ(p.consumed(), v2_fixed_size);
}

TEST(proxy_protocol_incremental, feeding_after_the_header_consumes_nothing) {
    parser p;
    ASSERT_TRUE(std::holds_alternative<header>(p.feed(of("PROXY UNKNOWN\r\n"))));
    auto again = p.feed(of("more"));
    EXPECT_TRUE(std::holds_alternative<header>(again));
    EXPECT_EQ(p.consumed(), 0U);
}

TEST(proxy_protocol_incremental, errors_are_sticky) {
    parser p;
    ASSERT_TRUE(std::holds_alternative<std::error_code>(p.feed(bytes{0x10})));
    auto again = p.feed(of("PROXY UNKNOWN\r\n"));
    ASSERT_TRUE(std::holds_alternative<std::error_code>(again));
    EXPECT_EQ(std::get<std::error_code>(again), parse_error::not_proxy_protocol);
    EXPECT_EQ(p.consumed(), 0U);
}

TEST(proxy_protocol_errors, category_names_each_code) {
    const std::error_code ec = parse_error::too_long;
    EXPECT_STREQ(ec.category().name(), "starling.net.proxy_protocol");
    EXPECT_NE(ec.message().find("size limit"), std::string::npos);
    EXPECT_NE(std::error_code(parse_error::not_proxy_protocol).message(),
              std::error_code(parse_error::malformed).message());
}

}  // namespace
}  // namespace starling::net::proxy_protocol
